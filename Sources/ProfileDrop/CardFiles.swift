import ProfileDropCardFile
import ProfileDropCore

/// Card files on disk: reading the card to share, and saving a received one as `share --save` does.
public enum CardFiles {
    /// The card in the JSON file at `path` (the users' own format), with the photo it names read
    /// from beside it.
    /// - Throws: ``PairingError`` of code ``PairingErrorCode/configuration`` naming every problem.
    public static func load(contentsOf path: String) throws(PairingError) -> ProfileCard {
        do {
            return try CardFile.load(contentsOf: path)
        } catch {
            throw PairingError(.configuration, "\(error)")
        }
    }

    /// Checks, before a run, that `directory` can take a card: it exists as a directory that can
    /// be written, or it can be created (it is then created). A card must never arrive with nowhere
    /// to go.
    /// - Throws: ``PairingError`` of code ``PairingErrorCode/configuration``.
    public static func checkDirectory(_ directory: String) throws(PairingError) {
        if let problem = CardSaver.directoryProblem(directory) { throw PairingError(.configuration, problem) }
    }

    /// Saves `card` in `directory`: `NAME.json` and its photo beside it, under the first free name
    /// (`NAME-2`…), the name made safe for a path. A save never overwrites a file and never
    /// leaves part of one.
    /// - Returns: the path of the JSON file.
    /// - Throws: ``PairingError`` of code ``PairingErrorCode/file``.
    @discardableResult
    public static func save(_ card: ProfileCard, in directory: String) throws(PairingError) -> String {
        do {
            return try CardSaver.save(card, in: directory)
        } catch {
            throw PairingError(.file, "\(error)")
        }
    }
}
