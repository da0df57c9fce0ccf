import Foundation

/// Runs `executable` with `arguments` to its end; returns its status, standard output and standard
/// error. For programs whose output is small or whose standard error is: standard output is read
/// to its end first.
public func runProgram(_ executable: String, _ arguments: [String]) throws -> (
    status: Int32, output: String, errors: String
) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (
        process.terminationStatus, String(decoding: outputData, as: UTF8.self),
        String(decoding: errorData, as: UTF8.self)
    )
}
