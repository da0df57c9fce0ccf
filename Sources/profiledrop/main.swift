import ProfileDropCLI

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// The executable stays thin: everything testable lives in ProfileDropCLI. A reader that closes its
// end of a pipe must not kill the process (a `share` mid-session would never close it): the write
// fails instead, and the run says so and exits 6.
signal(SIGPIPE, SIG_IGN)
exitProcess(CommandLineTool.run(arguments: Array(CommandLine.arguments.dropFirst())))
