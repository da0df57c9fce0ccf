import Foundation
import ProfileDropTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The swarm's OCI image (`scripts/image.sh`, docs/swarm.md): built offline from scratch, it holds
/// everything `profiledrop` needs, so a shard run from its root with chroot writes the same summary
/// as the binary on the host.
@Suite struct SwarmImageTests {
    /// Why the image cannot be built here, or nil: it needs root, buildah and a static busybox,
    /// which `scripts/setup.sh` installs.
    static var missingPrerequisite: String? {
        if getuid() != 0 { return "not root" }
        if !FileManager.default.isExecutableFile(atPath: "/usr/bin/buildah") { return "no buildah" }
        if !FileManager.default.isExecutableFile(atPath: "/bin/busybox") { return "no busybox-static" }
        return nil
    }

    @Test func aShardRunFromTheImagesRootMatchesTheHost() throws {
        if let missing = Self.missingPrerequisite {
            print(
                "SwarmImageTests: skipped, \(missing) (scripts/setup.sh installs buildah and busybox-static)")
            return
        }
        let name = "localhost/profiledrop-test-\(UUID().uuidString.lowercased()):test"
        let script = TestPaths.packageRoot.appendingPathComponent("scripts/image.sh").path
        let built = try runProgram(script, ["--binary", TestPaths.executable.path, name])
        try #require(built.status == 0, "\(built.errors)")
        defer { _ = try? runProgram("/usr/bin/buildah", ["rmi", "--force", name]) }

        let container = try runProgram("/usr/bin/buildah", ["from", "--pull-never", name])
        try #require(container.status == 0, "\(container.errors)")
        let id = container.output.trimmingCharacters(in: .whitespacesAndNewlines)
        defer { _ = try? runProgram("/usr/bin/buildah", ["rm", id]) }
        let mounted = try runProgram("/usr/bin/buildah", ["mount", id])
        try #require(mounted.status == 0, "\(mounted.errors)")
        let root = mounted.output.trimmingCharacters(in: .whitespacesAndNewlines)
        defer { _ = try? runProgram("/usr/bin/buildah", ["unmount", id]) }
        // A container runtime mounts /proc; chroot does not, and the Swift runtime reads the
        // arguments from it.
        let proc = try runProgram("/bin/mount", ["-t", "proc", "proc", root + "/proc"])
        try #require(proc.status == 0, "\(proc.errors)")
        defer { _ = try? runProgram("/bin/umount", [root + "/proc"]) }

        let shard = [
            "simulate", "--swarm", "--runs", "40", "--seed", "5", "--shard", "1/2", "--summary", "-",
        ]
        let inImage = try runProgram("/usr/sbin/chroot", [root, "/usr/local/bin/profiledrop"] + shard)
        let onHost = try runProgram(TestPaths.executable.path, shard)
        #expect(inImage.status == 0, "\(inImage.errors)")
        #expect(onHost.status == 0, "\(onHost.errors)")
        #expect(inImage.output.contains("\"shard\" : \"1/2\""), "\(inImage.output.prefix(200))")
        #expect(inImage.output == onHost.output)
        // The Job's command line needs a shell with arithmetic.
        let shell = try runProgram("/usr/sbin/chroot", [root, "/bin/sh", "-c", "echo $((0 + 1))"])
        #expect(shell.output == "1\n", "\(shell.errors)")
    }
}
