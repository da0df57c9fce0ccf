/// Placeholder entry point.
public enum CommandLineTool {
    public static func run(arguments: [String]) -> Int32 { 0 }
}
public func exitProcess(_ code: Int32) -> Never { fatalError() }
