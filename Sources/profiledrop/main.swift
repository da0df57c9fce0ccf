import ProfileDropCLI

// The executable stays thin: everything testable lives in ProfileDropCLI.
exitProcess(CommandLineTool.run(arguments: Array(CommandLine.arguments.dropFirst())))
