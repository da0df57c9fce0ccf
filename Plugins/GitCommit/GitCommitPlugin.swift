import Foundation
import PackagePlugin

/// Writes `GitCommit.swift` with the commit the package is built from (`buildGitCommit`), for
/// `profiledrop version`. It runs `git` before every build (a prebuild command, so a new commit is
/// seen without a clean build) and rewrites the file only when the commit changed, so nothing
/// recompiles otherwise. Outside a git checkout of this package, or without git, the commit is
/// `unknown`. No package is fetched: it needs only `/bin/sh` and `git`.
@main
struct GitCommitPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appendingPathComponent("GitCommit")
        // $1: the package directory; $2: the output directory. The commit counts only when the
        // package directory is the checkout's top level, so a source tree unpacked inside some
        // other repository does not report that repository's commit.
        let script = #"""
            mkdir -p "$2" || exit 1
            commit=unknown
            top=$(git -C "$1" rev-parse --show-toplevel 2>/dev/null) || top=
            if [ -n "$top" ] && [ "$(cd "$top" && pwd -P)" = "$(cd "$1" && pwd -P)" ]; then
                commit=$(git -C "$1" rev-parse --short=12 HEAD 2>/dev/null) || commit=unknown
                [ -n "$commit" ] || commit=unknown
            fi
            text="// Generated before each build by Plugins/GitCommit; not committed.
            let buildGitCommit = \"$commit\""
            if [ "$(cat "$2/GitCommit.swift" 2>/dev/null)" != "$text" ]; then
                printf '%s\n' "$text" > "$2/GitCommit.swift"
            fi
            """#
        return [
            .prebuildCommand(
                displayName: "Reading the git commit for profiledrop version",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: ["-c", script, "git-commit", context.package.directoryURL.path, output.path],
                outputFilesDirectory: output)
        ]
    }
}
