import CLibFuzzer
import FuzzSupport

#if canImport(Glibc)
    import Glibc
#endif

/// The check the running fuzz executable applies to each input, set once by ``FuzzDriver/run(target:_:)``
/// before libFuzzer starts, and only read after.
nonisolated(unsafe) private var harness: (name: String, check: ([UInt8]) -> FuzzFindings)?

/// libFuzzer calls this once per input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let harness else { preconditionFailure("FuzzDriver.run(target:_:) was not called") }
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    FuzzReport.trapOnViolations(harness.check(bytes), target: harness.name)
    return 0
}

/// The one libFuzzer driver every fuzz executable runs: it hands libFuzzer the process's arguments
/// and checks each input with the target's harness, trapping on a broken invariant.
public enum FuzzDriver {
    /// Runs libFuzzer with `check` as the target named `target`; never returns.
    public static func run(target: String, _ check: @escaping ([UInt8]) -> FuzzFindings) -> Never {
        harness = (target, check)
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, fuzzOneInput))
    }
}
