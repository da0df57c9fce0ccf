import Foundation
import ProfileDropCardFile
import ProfileDropCore
import ProfileDropTestSupport
import Testing

@testable import ProfileDropSimulator

/// The repository's Scenarios directory, found from this file's path.
let scenariosDirectory: String = {
    var url = URL(fileURLWithPath: #filePath)
    url.deleteLastPathComponent()
    url.deleteLastPathComponent()
    url.deleteLastPathComponent()
    return url.appendingPathComponent("Scenarios").path
}()

private let cardJSON =
    #"{"name": "Bori", "age": 3, "sex": "female", "neutered": true, "size": "small", "owner": "minji"}"#

private func scenarioText(devices: String? = nil, extra: String = "") -> String {
    let deviceList =
        devices ?? #"[{"name": "a", "pose": {"x": 0, "y": 0, "heading": 0}, "card": \#(cardJSON)}]"#
    return #"{"devices": \#(deviceList)\#(extra)}"#
}

private func parseError(_ text: String) -> String? {
    do {
        _ = try Scenario(json: text, baseDirectory: ".")
        return nil
    } catch {
        return error.description
    }
}

@Suite struct ScenarioTests {
    @Test func parsesEveryField() throws {
        let text = #"""
            {"seed": 77, "timeLimit": 12.5,
             "faults": {"delayMs": 3, "jitterMs": 1.5, "loss": 0.3, "duplicate": 0.05, "reorder": 0.1,
                        "reorderDelayMs": 40, "corrupt": 0.02,
                        "partitions": [{"devices": ["b"], "start": 1, "end": 2.5},
                                       {"devices": ["a"], "start": 4}]},
             "devices": [
               {"name": "a", "pose": {"x": 0, "y": 0, "heading": 0}, "consent": "decline",
                "card": \#(cardJSON)},
               {"name": "b", "pose": {"x": 7, "y": 1, "heading": 180},
                "motion": [{"hold": 0.5}, {"moveTo": {"x": 8, "y": 0, "heading": 170}, "over": 1}],
                "consent": {"decision": "accept", "after": 0.25}, "card": \#(cardJSON), "photoBytes": 1000}]}
            """#
        let scenario = try Scenario(json: text, baseDirectory: ".")
        #expect(scenario.seed == 77)
        #expect(scenario.timeLimit == .milliseconds(12_500))
        #expect(scenario.faults.delay == .milliseconds(3))
        #expect(scenario.faults.jitter == .microseconds(1500))
        #expect(scenario.faults.lossRate == 0.3)
        #expect(scenario.faults.duplicationRate == 0.05)
        #expect(scenario.faults.reorderRate == 0.1)
        #expect(scenario.faults.reorderDelay == .milliseconds(40))
        #expect(scenario.faults.corruptionRate == 0.02)
        #expect(
            scenario.faults.partitions == [
                Partition(
                    isolated: [1], start: Instant.zero + .seconds(1),
                    end: Instant.zero + .milliseconds(2500)),
                Partition(isolated: [0], start: Instant.zero + .seconds(4), end: nil),
            ])
        #expect(scenario.faults.hasPermanentPartition)
        #expect(scenario.devices.map(\.name) == ["a", "b"])
        #expect(scenario.devices[0].consent == .decline(after: Scenario.Consent.defaultReaction))
        #expect(scenario.devices[1].consent == .accept(after: .milliseconds(250)))
        #expect(scenario.devices[1].pose == Pose(x: 7, y: 1, heading: 180))
        #expect(
            scenario.devices[1].motion == [
                .hold(.milliseconds(500)), .move(to: Pose(x: 8, y: 0, heading: 170), over: .seconds(1)),
            ])
        #expect(
            scenario.devices[1].motionScript.pose(at: Instant.zero + .seconds(10))
                == Pose(x: 8, y: 0, heading: 170))
        #expect(scenario.devices[0].card.name == "Bori")
        #expect(scenario.devices[0].card.photo == nil)
        #expect(scenario.devices[1].card.photo?.data.count == 1000)
        #expect(scenario.devices[1].card.photo?.format == .jpeg)
    }

    @Test func defaultsApplyWhenOptionalKeysAreAbsent() throws {
        let scenario = try Scenario(json: scenarioText(), baseDirectory: ".")
        #expect(scenario.seed == nil)
        #expect(scenario.timeLimit == Timeouts().closeBound + .seconds(1))
        #expect(scenario.timeouts == Timeouts())
        #expect(scenario.faults == .none)
        #expect(scenario.devices[0].consent == .accept(after: Scenario.Consent.defaultReaction))
        #expect(scenario.devices[0].motion.isEmpty)
        #expect(scenario.devices[0].start == .zero)
    }

    @Test func aStartSwitchesTheDeviceOnLaterAndMovesTheDefaultLimit() throws {
        let devices =
            #"[{"name": "a", "pose": {"x": 0, "y": 0}, "card": \#(cardJSON)},"#
            + #"{"name": "b", "pose": {"x": 7, "y": 0}, "card": \#(cardJSON), "start": 12.5}]"#
        let scenario = try Scenario(json: scenarioText(devices: devices), baseDirectory: ".")
        #expect(scenario.devices.map(\.start) == [.zero, .milliseconds(12_500)])
        #expect(scenario.timeLimit == .milliseconds(12_500) + Timeouts().closeBound + .seconds(1))
        let negative = #"[{"name": "a", "pose": {"x": 0, "y": 0}, "card": \#(cardJSON), "start": -1}]"#
        #expect(parseError(scenarioText(devices: negative)) == "devices[0].start: must not be negative")
    }

    @Test func aSeedUpToTwoToTheFiftyThirdIsANumber() throws {
        let scenario = try Scenario(
            json: scenarioText(extra: #", "seed": 9007199254740991"#), baseDirectory: ".")
        #expect(scenario.seed == 9_007_199_254_740_991)
    }

    @Test func syntheticPhotosAreDeterministicPerName() throws {
        let first = try SyntheticPhoto.jpeg(byteCount: 4096, label: "a")
        #expect(first == (try SyntheticPhoto.jpeg(byteCount: 4096, label: "a")))
        #expect(first != (try SyntheticPhoto.jpeg(byteCount: 4096, label: "b")))
    }

    @Test(arguments: [
        (scenarioText(extra: #", "colour": 1"#), #"unknown key "colour""#),
        (#"{"seed": 1}"#, #"missing required key "devices""#),
        (#"{"devices": []}"#, "at least one device"),
        (
            #"{"devices": ["#
                + Array(repeating: #"{"name": "a", "pose": {"x": 0, "y": 0, "heading": 0}}"#, count: 501)
                .joined(separator: ",") + "]}",
            "devices: a scenario has at most 500 devices, found 501"
        ),
        (#"{"devices": 3}"#, "devices: expected an array, found a number"),
        (scenarioText(extra: #", "faults": {"loss": 1.5}"#), "faults.loss: a rate must be from 0 to 1"),
        (scenarioText(extra: #", "faults": {"lossRate": 0.1}"#), #"faults: unknown key "lossRate""#),
        (
            scenarioText(extra: #", "faults": {"partitions": [{"devices": ["zed"]}]}"#),
            #"no device is named "zed""#
        ),
        (
            scenarioText(extra: #", "faults": {"partitions": [{"devices": ["a"], "start": 2, "end": 1}]}"#),
            "must end after it starts"
        ),
        (scenarioText(extra: #", "timeLimit": -1"#), "timeLimit: must be a positive number of seconds"),
        (scenarioText(extra: #", "seed": "banana""#), "seed: expected a 64-bit unsigned integer"),
        // The range a whole number is refused with is the one it is checked against.
        (
            scenarioText(extra: #", "seed": 9007199254740994"#),
            "seed: expected a whole number from 0 to 9007199254740992, found 9.007199254740994e+15"
        ),
        (scenarioText(extra: #", "seed": -1"#), "seed: expected a whole number from 0 to 9007199254740992"),
        (
            scenarioText(
                devices: #"[{"name": "a", "pose": {"x": 0, "y": 0}, "card": \#(cardJSON), "size": 2}]"#),
            #"devices[0]: unknown key "size""#
        ),
        (
            scenarioText(devices: #"[{"name": "a", "pose": {"x": 0, "z": 0}, "card": \#(cardJSON)}]"#),
            #"devices[0].pose: unknown key "z""#
        ),
        (
            scenarioText(devices: #"[{"name": "a", "pose": {"x": "0", "y": 0}, "card": \#(cardJSON)}]"#),
            "devices[0].pose.x: expected a number, found a string"
        ),
        (
            scenarioText(
                devices:
                    #"[{"name": "a", "pose": {"x": 0, "y": 0}, "consent": "maybe", "card": \#(cardJSON)}]"#),
            #"unknown decision "maybe""#
        ),
        (
            scenarioText(
                devices:
                    #"[{"name": "a", "pose": {"x": 0, "y": 0}, "motion": [{"jump": 1}], "#
                    + #""card": \#(cardJSON)}]"#
            ),
            "devices[0].motion[0]: a motion step is"
        ),
        (
            scenarioText(devices: #"[{"name": "a", "pose": {"x": 0, "y": 0}, "card": {"name": "Bori"}}]"#),
            "devices[0].card"
        ),
        (
            scenarioText(devices: #"[{"name": "a", "pose": {"x": 0, "y": 0}, "card": {"nmae": "Bori"}}]"#),
            #"devices[0].card: unknown key "nmae""#
        ),
        (
            scenarioText(devices: #"[{"name": "a b", "pose": {"x": 0, "y": 0}, "card": \#(cardJSON)}]"#),
            "devices[0].name: a device name is"
        ),
        (
            scenarioText(
                devices:
                    #"[{"name": "a", "pose": {"x": 0, "y": 0}, "card": \#(cardJSON)}, "#
                    + #"{"name": "a", "pose": {"x": 0, "y": 0}, "card": \#(cardJSON)}]"#
            ),
            #"devices[1].name: duplicate device name "a""#
        ),
        ("{\n  \"devices\": [,]\n}", "invalid JSON at line 2, column 15"),
        (#"{"devices": [], "devices": []}"#, #"duplicate key "devices""#),
    ])
    func rejectsWithOneLineError(text: String, expected: String) {
        let message = parseError(text)
        #expect(message?.contains(expected) == true, "got: \(message ?? "no error")")
        #expect(message?.contains("\n") == false)
    }

    @Test func loadNamesTheFileInErrors() {
        let path = "/nonexistent/scenario.json"
        #expect(throws: ScenarioError.self) { try Scenario.load(contentsOf: path) }
        do {
            _ = try Scenario.load(contentsOf: path)
        } catch {
            #expect(error.description.hasPrefix(path + ": "))
        }
    }

    @Test func cardPathsResolveAgainstTheScenarioDirectory() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "scenario-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try cardJSON.write(
            to: directory.appendingPathComponent("bori.json"), atomically: true, encoding: .utf8)
        let scenarioPath = directory.appendingPathComponent("room.json").path
        try scenarioText(devices: #"[{"name": "a", "pose": {"x": 0, "y": 0}, "card": "bori.json"}]"#)
            .write(toFile: scenarioPath, atomically: true, encoding: .utf8)
        let scenario = try Scenario.load(contentsOf: scenarioPath)
        #expect(scenario.devices[0].card.owner == "minji")
    }

    @Test func shippedScenariosParse() throws {
        let names = [
            "happy-pair", "lossy-30", "out-of-range", "too-close", "misaligned", "crowded-room-20",
            "simultaneous-invite", "declined", "walk-in-photo", "walk-away", "crowded-room-200",
        ]
        for name in names {
            let scenario = try Scenario.load(contentsOf: scenariosDirectory + "/\(name).json")
            #expect(scenario.devices.count >= 2, "\(name)")
        }
        let crowded = try Scenario.load(contentsOf: scenariosDirectory + "/crowded-room-20.json")
        #expect(crowded.devices.count == 20)
        var closePairs: [String] = []
        for first in 0..<20 {
            for second in (first + 1)..<20
            where crowded.devices[first].pose.distance(to: crowded.devices[second].pose) < 30 {
                closePairs.append("\(crowded.devices[first].name)-\(crowded.devices[second].name)")
            }
        }
        #expect(closePairs == ["alice-bob"])
    }
}

/// Scenario files have a reader; the one writer, ``CrowdedRoom/fileText(_:)``, covers only the
/// generator's rooms (still devices, inline cards without photos), and `CrowdedRoomTests` reads its
/// 200-device room back. Each inline card goes to the card reader as the parsed
/// object; it must read as the same card file would.
@Suite struct ScenarioCardTests {
    static let trickyCard =
        #"{"name": "Bo \"ri\" \\ \u00e9 e\u0301", "age": 3.0, "sex": "female", "neutered": false, "size": "small", "#
        + #""keywords": ["a/b", "\ud83d\ude00", "탐험"], "owner": "mi\/nji"}"#

    @Test func inlineCardsReadAsTheirCardFilesWould() throws {
        let text = #"{"devices": [{"name": "a", "pose": {"x": -0, "y": 0}, "card": \#(Self.trickyCard)}]}"#
        let scenario = try Scenario(json: text, baseDirectory: ".")
        let direct = try CardFile.card(jsonData: Array(Self.trickyCard.utf8), baseDirectory: ".")
        #expect(scenario.devices[0].card.encoded() == direct.encoded())
    }

    /// Mutated scenarios: each one that loads holds, for every inline card, the card that
    /// Foundation's JSON reader and writer give for the same object, byte for byte; and every one
    /// that does not load fails with a one-line error.
    @Test func mutatedScenariosReadTheirCardsAsFoundationDoes() throws {
        let seed =
            Array(
                #"{"seed": 3, "devices": [{"name": "a", "pose": {"x": 0, "y": 0, "heading": 0}, "card": \#(Self.trickyCard)}, "#
                    .utf8)
            + Array(#"{"name": "b", "pose": {"x": 7, "y": 0, "heading": 180}, "card": \#(cardJSON)}]}"#.utf8)
        var mutations = ByteMutations(seed: 0x5CE7)
        var loaded = 0
        var compared = 0
        for round in 0..<8_000 {
            let bytes = mutations.mutate(seed)
            guard let text = String(validating: bytes, as: UTF8.self) else { continue }
            let scenario: Scenario
            do {
                scenario = try Scenario(json: text, baseDirectory: ".")
            } catch {
                #expect(!error.description.isEmpty && !error.description.contains("\n"))
                continue
            }
            loaded += 1
            guard let root = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any],
                let devices = root["devices"] as? [[String: Any]], devices.count == scenario.devices.count
            else { continue }
            for (index, device) in devices.enumerated() {
                guard let card = device["card"] as? [String: Any], device["photoBytes"] == nil,
                    let data = try? JSONSerialization.data(withJSONObject: card)
                else { continue }
                let direct = try? CardFile.card(jsonData: [UInt8](data), baseDirectory: ".")
                #expect(
                    direct?.encoded() == scenario.devices[index].card.encoded(), "round \(round): \(text)")
                compared += 1
            }
        }
        #expect(loaded > 150 && compared > 300, "\(loaded) loaded, \(compared) compared")
    }
}
