import Foundation
import ProfileDropCapture
import ProfileDropCore
import ProfileDropTestSupport
import Testing

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// `TimelineSVG` over the golden captures: what the picture holds, and that a real SVG renderer
/// (rsvg-convert, Debian's librsvg2-bin) draws it.
struct TimelineSVGTests {
    static func picture(_ name: String) throws -> (
        capture: CaptureFile, timeline: SessionTimeline, svg: String
    ) {
        let (capture, timeline) = try SessionTimelineTests.golden(name)
        return (capture, timeline, TimelineSVG.render(timeline))
    }

    static func count(_ needle: String, in text: String) -> Int {
        text.components(separatedBy: needle).count - 1
    }

    /// Whether `svg` parses as XML, and the root's width and height.
    static func parse(_ svg: String) -> (wellFormed: Bool, width: Int?, height: Int?) {
        final class Root: NSObject, XMLParserDelegate {
            var attributes: [String: String]?
            func parser(
                _ parser: XMLParser, didStartElement element: String, namespaceURI: String?,
                qualifiedName: String?, attributes: [String: String] = [:]
            ) {
                if attributes.isEmpty == false, self.attributes == nil, element == "svg" {
                    self.attributes = attributes
                }
            }
        }
        let parser = XMLParser(data: Data(svg.utf8))
        let root = Root()
        parser.delegate = root
        let wellFormed = parser.parse()
        return (
            wellFormed, root.attributes?["width"].flatMap { Int($0) },
            root.attributes?["height"].flatMap { Int($0) }
        )
    }

    static var rsvgConvert: String? {
        ["/usr/bin/rsvg-convert", "/usr/local/bin/rsvg-convert", "/opt/homebrew/bin/rsvg-convert"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// Runs `scenario` as a user draws it, `simulate --timeline` with a capture beside it, and
    /// returns the timeline replayed from that capture and the picture drawn, which must be
    /// well-formed.
    static func simulatedPicture(of scenario: String) throws -> (timeline: SessionTimeline, svg: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "profiledrop-picture-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let capture = directory.appendingPathComponent("run.pcapng").path
        let picture = directory.appendingPathComponent("run.svg").path
        let result = try runProgram(
            try #require(ReplayCommandTests.executable),
            ["simulate", scenario, "--quiet", "--capture", capture, "--keylog", "--timeline", picture])
        #expect(result.status == 0, "\(result.errors)")
        let timeline = try SessionTimeline(capture: try CaptureFile.read(path: capture), title: "run")
        let svg = try String(contentsOfFile: picture, encoding: .utf8)
        #expect(parse(svg).wellFormed)
        return (timeline, svg)
    }

    @Test(arguments: [
        "happy-path", "out-of-range", "declined", "lossy-link", "tampered", "simultaneous-invite",
    ])
    func oneArrowPerDatagramTheBandsAndTheOutcome(_ name: String) throws {
        let (capture, timeline, svg) = try Self.picture(name)
        let parsed = Self.parse(svg)
        #expect(parsed.wellFormed)
        #expect(parsed.width == TimelineSVG.width)
        #expect(
            Self.count("<g class=\"datagram ", in: svg) == capture.devices.map(\.outbound.count).reduce(0, +))
        #expect(
            Self.count("<g class=\"datagram not-received\"", in: svg)
                == timeline.datagrams.filter { $0.fate == .notReceived }.count)
        #expect(Self.count("class=\"band distance\"", in: svg) == 1)
        #expect(Self.count("class=\"band bearing\"", in: svg) == 1)
        #expect(svg.contains(">band 5–10 cm</text>"))
        #expect(svg.contains(">≤ 30°</text>"))
        #expect(
            Self.count("<rect class=\"gate-open\"", in: svg)
                == timeline.tracks.map(\.gateOpen.count).reduce(0, +))
        #expect(
            Self.count("class=\"gate-never\"", in: svg) == timeline.tracks.filter(\.gateOpen.isEmpty).count)
        #expect(svg.contains("class=\"title\"") && svg.contains(">\(name)</text>"))
        for track in timeline.tracks {
            #expect(svg.contains("> \(track.closeReason ?? "did not close")</tspan>"))
        }
    }

    /// A photo's transfer is hundreds of chunk and SACK datagrams: long runs of them fold into one
    /// line each, and every datagram is still accounted for, drawn or counted in exactly one fold,
    /// and so is every one not received. Drawn as a user draws it, by `simulate --timeline`, and
    /// counted from the capture of the same run.
    @Test(
        .enabled(
            if: ReplayCommandTests.executable != nil, "the profiledrop executable is not built (swift build)")
    )
    func longTransfersFoldAndEveryDatagramIsCounted() throws {
        let scenario = GoldenCaptures.packageRoot.appendingPathComponent("Scenarios/walk-in-photo.json").path
        let (timeline, svg) = try Self.simulatedPicture(of: scenario)
        func attributes(_ name: String) -> [Int] {
            svg.components(separatedBy: "<g class=\"datagram-run\" ").dropFirst().compactMap { group in
                group.components(separatedBy: "\(name)=\"").dropFirst().first?.split(separator: "\"").first
                    .flatMap { Int($0) }
            }
        }
        let folded = attributes("data-count")
        let foldedLost = attributes("data-not-received")
        #expect(folded.count >= 3, "the transfer folds")
        #expect(foldedLost.count == folded.count)
        #expect(folded.allSatisfy { $0 >= TimelineSVG.foldThreshold - 1 })
        #expect(timeline.datagrams.count > 800)
        #expect(Self.count("<g class=\"datagram ", in: svg) + folded.reduce(0, +) == timeline.datagrams.count)
        let lost = timeline.datagrams.filter { $0.fate == .notReceived }.count
        #expect(lost > 0)
        #expect(Self.count("<g class=\"datagram not-received\"", in: svg) + foldedLost.reduce(0, +) == lost)
        // Folding is what keeps the picture readable: far fewer rows than datagrams.
        let height = try #require(Self.parse(svg).height)
        #expect(height < timeline.datagrams.count * 18 / 3)
    }

    /// A long run (two devices out of range for 15 or 30 minutes, some 3,000 or 6,000 datagrams and
    /// 150 or 300 marks) draws at most ``TimelineSVG/maximumRows`` rows, with the rest counted in
    /// one band, and its estimates thinned to what the panel's columns show: for 15 minutes as
    /// lines with at most four points per pixel column, for 30 minutes (more estimates than
    /// columns) as one stroke per column from the lowest to the highest. Every datagram and mark is
    /// still accounted for, drawn or counted, no extreme estimate is lost, and the picture stays
    /// small.
    @Test(
        .enabled(
            if: ReplayCommandTests.executable != nil, "the profiledrop executable is not built (swift build)"),
        arguments: [900, 1800]
    )
    func aLongRunDrawsBoundedRowsAndCountsTheRest(seconds: Int) throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "profiledrop-long-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let source = GoldenCaptures.packageRoot.appendingPathComponent("Scenarios/out-of-range.json")
        let text = try String(contentsOf: source, encoding: .utf8)
        let long = text.replacingOccurrences(of: "\"overall\": 12", with: "\"overall\": \(seconds)")
        try #require(long != text, "the scenario's overall limit moved")
        let scenario = directory.appendingPathComponent("long.json").path
        try long.write(toFile: scenario, atomically: true, encoding: .utf8)
        let (timeline, svg) = try Self.simulatedPicture(of: scenario)
        #expect(timeline.datagrams.count > seconds * 2)
        #expect(timeline.marks.count > seconds / 9)

        func attribute(_ name: String, of group: String) -> String? {
            group.components(separatedBy: "\(name)=\"").dropFirst().first?.split(separator: "\"").first
                .map(String.init)
        }
        let elided = svg.components(separatedBy: "<g class=\"rows-elided\" ").dropFirst()
        #expect(elided.count == 1)
        let band = try #require(elided.first)
        let elidedDatagrams = try #require(attribute("data-datagrams", of: band).flatMap { Int($0) })
        let elidedMarks = try #require(attribute("data-events", of: band).flatMap { Int($0) })
        let runs = svg.components(separatedBy: "<g class=\"datagram-run\" ").dropFirst()
        let folded = runs.compactMap { attribute("data-count", of: $0).flatMap { Int($0) } }.reduce(0, +)
        let drawnDatagrams = Self.count("<g class=\"datagram ", in: svg)
        let drawnMarks = Self.count("<g class=\"mark\"", in: svg)
        #expect(drawnDatagrams + folded + elidedDatagrams == timeline.datagrams.count)
        #expect(drawnMarks + elidedMarks == timeline.marks.count)
        #expect(drawnDatagrams + drawnMarks + runs.count == TimelineSVG.maximumRows)
        // The first and last rows are the run's own.
        let first = try #require(timeline.datagrams.first)
        #expect(svg.contains("data-type=\"\(first.type)\""))
        let last = Double((try #require(timeline.marks.last).time - timeline.start).nanosecondsClamped) / 1e9
        #expect(svg.contains(String(format: ">%.3f s</text>", last)))

        // The distance axis tops at 20 cm over 170 px (as for the short run): the drawn points span
        // the estimates' whole range, so no lowest or highest was thinned away.
        let samples = timeline.tracks.map(\.samples.count).reduce(0, +)
        let distances = timeline.tracks.flatMap(\.samples).map(\.distance)
        let lowest = try #require(distances.min())
        let highest = try #require(distances.max())
        #expect(highest < 20)
        let expectedRange = (highest - lowest) * 170 / 20
        let circles = Self.count("<circle ", in: svg)
        let envelopes = svg.components(separatedBy: "<path class=\"estimate-envelope ").dropFirst()
        let ys: [Double]
        if seconds == 900 {
            // Lines: fewer points than estimates, at most four per pixel column and line.
            #expect(envelopes.isEmpty)
            #expect(circles < samples * 2)
            #expect(circles <= timeline.tracks.count * 2 * 4 * (TimelineSVG.width + 1))
            ys = svg.components(separatedBy: "<polyline class=\"estimate distance\" ").dropFirst().flatMap {
                line -> [Double] in
                (attribute("points", of: line) ?? "").split(separator: " ").compactMap {
                    $0.split(separator: ",").last.flatMap { Double($0) }
                }
            }
            #expect(abs(try #require(ys.max()) - (try #require(ys.min())) - expectedRange) < 0.25)
        } else {
            // One stroke per column: no lines or dots, every estimate counted in one of them.
            #expect(envelopes.count == 2 * timeline.tracks.count)
            #expect(circles == 0)
            #expect(!svg.contains("<polyline class=\"estimate "))
            let counted = envelopes.compactMap { attribute("data-estimates", of: $0).flatMap { Int($0) } }
            #expect(counted.reduce(0, +) == 2 * samples)
            ys = envelopes.filter { $0.hasPrefix("distance") }.flatMap { path -> [Double] in
                // `M x,y V y` per column.
                (attribute(" d", of: path) ?? "").split(whereSeparator: { "MV".contains($0) }).compactMap {
                    $0.split(separator: ",").last.flatMap { Double($0) }
                }
            }
            // A column is drawn at least a pixel tall.
            let drawnRange = try #require(ys.max()) - (try #require(ys.min()))
            #expect(drawnRange >= expectedRange - 0.25 && drawnRange < expectedRange + 1.1)
        }
        // A picture a viewer opens: bounded rows, well under a megabyte.
        let height = try #require(Self.parse(svg).height)
        #expect(height < TimelineSVG.maximumRows * 30 + 2_000)
        #expect(svg.utf8.count < 1_000_000)
    }

    @Test func theBandSpansFiveToTenCentimetresOnTheAxis() throws {
        let (_, _, svg) = try Self.picture("out-of-range")
        // The distance axis tops at 20 cm over 170 px: the band is 5 cm tall (42.5 px), from 10 cm.
        let band = try #require(
            svg.components(separatedBy: "\n").first { $0.contains("class=\"band distance\"") })
        #expect(band.contains("height=\"42.5\""))
        #expect(svg.contains("why: neither gate opened: "))
        #expect(svg.contains("class=\"no-transfer\""))
        let (_, _, happy) = try Self.picture("happy-path")
        #expect(!happy.contains("why: "))
        #expect(!happy.contains("class=\"no-transfer\""))
        #expect(Self.count("<polyline class=\"progress\"", in: happy) == 2)
        let (_, lossy, lossySVG) = try Self.picture("lossy-link")
        #expect(
            Self.count("<path class=\"retransmission\"", in: lossySVG)
                == lossy.tracks.map(\.retransmissions.count).reduce(0, +))
        #expect(lossySVG.contains("(▼ chunk sent again)"))
    }

    /// A capture may name any finite gate: a band or hysteresis near the largest double still
    /// draws, on axes that end at a kilometre and at 180°, instead of looping for ever.
    @Test func anyGateACaptureNamesIsDrawnOnBoundedAxes() throws {
        var (_, timeline, _) = try Self.picture("happy-path")
        timeline.band.bearingHysteresis = 1.7e308
        timeline.band.distanceHysteresis = 1.7e308
        timeline.band.distance = 5...1.7e308
        let svg = TimelineSVG.render(timeline)
        #expect(Self.parse(svg).wellFormed)
    }

    @Test func textIsEscaped() throws {
        var (_, timeline, _) = try Self.picture("declined")
        timeline.title = "<script> & \"quotes\" 'too'"
        timeline.lanes[0].name = "a<b"
        let svg = TimelineSVG.render(timeline)
        #expect(svg.contains("&lt;script&gt; &amp; &quot;quotes&quot; &apos;too&apos;"))
        #expect(!svg.contains("<script>"))
        #expect(svg.contains(">a&lt;b<") || svg.contains(">a&lt;b:<"))
        #expect(Self.parse(svg).wellFormed)
    }

    /// docs/timeline-example.svg, which the README shows, is what `profiledrop replay
    /// Captures/happy-path.pcapng --timeline docs/timeline-example.svg` draws today.
    @Test func theREADMEPictureIsCurrent() throws {
        var (_, timeline, _) = try Self.picture("happy-path")
        timeline.title = "ProfileDrop session: happy-path.pcapng"
        let committed = try String(
            contentsOf: GoldenCaptures.packageRoot.appendingPathComponent("docs/timeline-example.svg"),
            encoding: .utf8)
        #expect(
            committed == TimelineSVG.render(timeline),
            "redraw it: profiledrop replay Captures/happy-path.pcapng --timeline docs/timeline-example.svg")
    }

    @Test func theSameTimelineGivesTheSameText() throws {
        let first = try Self.picture("lossy-link").svg
        let second = try Self.picture("lossy-link").svg
        #expect(first == second)
    }

    @Test(
        .enabled(
            if: TimelineSVGTests.rsvgConvert != nil,
            "rsvg-convert is not installed (apt-get install librsvg2-bin)"),
        arguments: ["happy-path", "out-of-range"])
    func rsvgConvertDrawsItAsAPNG(_ name: String) throws {
        let (_, _, svg) = try Self.picture(name)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "profiledrop-timeline-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("\(name).svg")
        let output = directory.appendingPathComponent("\(name).png")
        try Data(svg.utf8).write(to: input)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(Self.rsvgConvert))
        process.arguments = [input.path, "-o", output.path]
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let complaint = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(complaint)")
        #expect(complaint.isEmpty, "\(complaint)")
        let png = [UInt8](try Data(contentsOf: output))
        // The signature, then IHDR: width and height, big-endian, at bytes 16 and 20.
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
        try #require(png.count > 24)
        func word(_ offset: Int) -> Int { png[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) } }
        #expect(word(16) == TimelineSVG.width)
        #expect(word(20) == Self.parse(svg).height)
        #expect((800...20_000).contains(word(20)))
        // A drawing, not a blank page: the file holds far more than a flat colour compresses to.
        #expect(png.count > 50_000)
    }
}
