/// The codes of one module's errors: what a caller switches on.
public protocol ErrorCode: Hashable, Sendable {
    /// The line an error with this code reads as, from its one-line diagnostic. By default the
    /// diagnostic itself; a module whose errors travel far (Noise's) names itself and the code.
    func describe(_ diagnostic: String) -> String
}

extension ErrorCode {
    /// The diagnostic itself.
    public func describe(_ diagnostic: String) -> String { diagnostic }
}

/// An error as every ProfileDrop module throws it: a code for the program that catches it, and one
/// line for the person who reads it, naming the file, option, interface or field concerned.
///
/// Each module names its own: `NoiseError` is `CodedError<NoiseErrorCode>`, so `NoiseError.Code`
/// is its codes, and a `catch` can match on `error.code`.
public struct CodedError<SomeCode: ErrorCode>: Error, Hashable, Sendable, CustomStringConvertible {
    /// The codes this error takes.
    public typealias Code = SomeCode

    /// What went wrong, for callers.
    public var code: Code
    /// What went wrong, for people.
    public var diagnostic: String

    /// An error with its code and diagnostic.
    public init(_ code: Code, _ diagnostic: String) {
        self.code = code
        self.diagnostic = diagnostic
    }

    /// The diagnostic as ``ErrorCode/describe(_:)`` words it. A line break it quotes (a file name
    /// can hold one) is kept: the command line escapes it when it prints the line.
    public var description: String { code.describe(diagnostic) }
}
