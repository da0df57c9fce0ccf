import ProfileDropErrors
import Testing

/// Two modules' codes: one that reads as its diagnostic, one that names itself as Noise's does.
private enum PlainCode: String, ErrorCode {
    case missing, broken
}

private enum NamingCode: String, ErrorCode {
    case refused

    func describe(_ diagnostic: String) -> String { "naming error \(rawValue): \(diagnostic)" }
}

struct CodedErrorTests {
    @Test func anErrorReadsAsItsDiagnosticUnlessItsCodeWordsIt() {
        #expect(CodedError(PlainCode.missing, "/tmp/x: no such file").description == "/tmp/x: no such file")
        #expect(CodedError(NamingCode.refused, "port 9").description == "naming error refused: port 9")
    }

    @Test func aCodeMayWordTheLineButTheDiagnosticIsKeptAsGiven() {
        // A quoted line break stays for the command line to escape; a code that words the line
        // decides for itself.
        let error = CodedError(PlainCode.broken, "cannot read a\nb")
        #expect(error.description == "cannot read a\nb")
        #expect(error.diagnostic == "cannot read a\nb")
        #expect(CodedError(NamingCode.refused, "a\nb").description == "naming error refused: a\nb")
    }

    @Test func errorsAreEqualWhenCodeAndDiagnosticAre() {
        #expect(CodedError(PlainCode.missing, "x") == CodedError(PlainCode.missing, "x"))
        #expect(CodedError(PlainCode.missing, "x") != CodedError(PlainCode.broken, "x"))
        #expect(CodedError(PlainCode.missing, "x") != CodedError(PlainCode.missing, "y"))
    }

    @Test func aCatchMatchesOnTheCode() {
        func fail() throws(CodedError<PlainCode>) { throw CodedError(.broken, "why") }
        var caught: PlainCode?
        do { try fail() } catch  where error.code == .missing { caught = .missing } catch {
            caught = error.code
        }
        #expect(caught == .broken)
    }
}
