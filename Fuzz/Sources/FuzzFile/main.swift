import FileFuzz
import FuzzDriver
import FuzzSupport

FuzzDriver.run(target: "file") { bytes in
    var findings = FuzzFindings()
    for violation in FileFuzz.check(bytes) { findings.fail(violation) }
    return findings
}
