import ProfileDropErrors

/// Why a capture file could not be read or replayed: a code for callers and one line for people,
/// saying what was wrong and, where it helps, where.
public typealias CaptureError = CodedError<CaptureErrorCode>

/// The kind of problem with a capture. The raw value is the name the tool prints.
public enum CaptureErrorCode: String, ErrorCode {
    /// The file is not pcapng (no Section Header Block at the start).
    case notPcapng = "not-pcapng"
    /// A block or field ends before its declared length.
    case truncated
    /// A length, option or value is inconsistent or out of range.
    case malformed
    /// The pcapng major version, or the version of our replay records, is not the one we read.
    case unsupportedVersion = "unsupported-version"
    /// The capture holds no replay records for the requested device, or none at all.
    case noDevice = "no-device"
    /// The capture was written without `--keylog`, so the random draws needed to replay are absent.
    case missingSecrets = "missing-secrets"
    /// The device's static private key is needed and was not given, or does not match.
    case staticKey = "static-key"
    /// Reading or writing the file failed.
    case io
}
