import ProfileDropCore

/// Draws a ``SessionTimeline`` as one SVG picture, from top to bottom: the title with each device's
/// outcome and, for a session that did not exchange, why; distance and bearing against the
/// proximity gate's band with the gate's open spans; the card transfer's progress with its
/// retransmissions; and the sequence chart of every datagram between the lifelines.
///
/// The text is generated directly (no dependencies), is the same for the same timeline, and
/// escapes every string it draws.
public enum TimelineSVG {
    /// The picture's width in pixels.
    public static let width = 1200

    /// A run of more than this many transfer datagrams keeps its first and last and folds the rest
    /// into one line that counts them, by sender and kind, and those not received: a 256 KiB photo
    /// is some 700 of them, which made the chart 13,000 pixels tall and said nothing more.
    /// Duplicates, changed and rejected datagrams and every other kind are always drawn.
    public static let foldThreshold = 6

    /// The most rows the sequence chart draws (datagrams, marks and folded runs). Past it, the chart
    /// keeps its first and last `maximumRows / 2` rows and sums up those between in one band, by
    /// sender and kind, with the marks they held: a two-hour capture is some 22,000 datagrams, a
    /// chart half a million pixels tall that no viewer scrolls, while the panels above still show
    /// the whole run.
    public static let maximumRows = 400

    /// The SVG document for `timeline`.
    public static func render(_ timeline: SessionTimeline) -> String {
        var canvas = Canvas(timeline: timeline)
        canvas.draw()
        return canvas.document()
    }

    /// `text` with the five XML special characters escaped, for text and attribute values.
    public static func escaped(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(character)
            }
        }
        return out
    }

    /// `value` with one decimal at most, e.g. `12.5`, `300`, `-4.1`: the same text on every
    /// platform.
    static func decimal(_ value: Double) -> String {
        guard value.isFinite else { return "0" }
        // Beyond what tenths in an Int hold (a capture's configuration may be any finite value).
        guard value.magnitude < 1e15 else { return String(value) }
        let tenths = Int((value * 10).rounded())
        let sign = tenths < 0 ? "-" : ""
        let magnitude = tenths.magnitude
        return magnitude % 10 == 0 ? "\(sign)\(magnitude / 10)" : "\(sign)\(magnitude / 10).\(magnitude % 10)"
    }
}

/// The drawing state: the layout's positions and the SVG text so far.
private struct Canvas {
    let timeline: SessionTimeline
    var body = ""
    var height = 0

    static let left = 120.0
    static let right = Double(TimelineSVG.width) - 40
    static let font = "DejaVu Sans, Helvetica, Arial, sans-serif"
    static let palette = ["#2563eb", "#ea580c", "#7c3aed", "#0d9488", "#db2777", "#65a30d"]
    static let uncaptured = "#6b7280"
    static let red = "#dc2626"
    static let amber = "#b45309"
    static let bandFill = "#16a34a"
    /// Where the sequence chart's column of decrypted frames begins.
    static let framesX = 815.0

    /// Seconds shown on the time axis, from the timeline's start.
    let span: Double
    let tick: Double

    init(timeline: SessionTimeline) {
        self.timeline = timeline
        let seconds = Double((timeline.end - timeline.start).nanosecondsClamped) / 1e9
        tick = Self.niceStep(max(seconds, 0.001) / 10)
        span = max((seconds / tick).rounded(.up), 1) * tick
    }

    func document() -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <svg xmlns="http://www.w3.org/2000/svg" width="\(TimelineSVG.width)" height="\(height)" \
        viewBox="0 0 \(TimelineSVG.width) \(height)" font-family="\(Self.font)">
        <rect class="background" x="0" y="0" width="\(TimelineSVG.width)" height="\(height)" fill="#ffffff"/>

        """ + body + "</svg>\n"
    }

    // MARK: - Layout

    mutating func draw() {
        var y = header()
        let distance = distancePanel(top: y + 34)
        let bearing = bearingPanel(top: distance + 34)
        let gates = gateStrip(top: bearing + 22)
        let progress = progressPanel(top: gates + 34)
        timeAxis(top: y + 34, bottom: progress)
        y = sequenceChart(top: progress + 64)
        height = Int(y.rounded(.up)) + 24
    }

    func color(_ lane: Int) -> String {
        timeline.lanes.indices.contains(lane) && timeline.lanes[lane].isCaptured
            ? Self.palette[lane % Self.palette.count] : Self.uncaptured
    }

    func name(_ lane: Int) -> String {
        timeline.lanes.indices.contains(lane) ? timeline.lanes[lane].name : "?"
    }

    func x(_ time: Instant) -> Double {
        let seconds = Double((time - timeline.start).nanosecondsClamped) / 1e9
        return Self.left + min(max(seconds / span, 0), 1) * (Self.right - Self.left)
    }

    /// The distance axis ends at this many centimetres at most.
    static let longestDistanceAxis = 100_000.0

    /// 1, 2 or 5 times a power of ten, at least `raw`; 1 for a `raw` that is not a positive finite
    /// number, so that no value a capture holds makes the loops below endless.
    static func niceStep(_ raw: Double) -> Double {
        guard raw.isFinite, raw > 0 else { return 1 }
        var power = 1.0
        while power * 10 <= raw { power *= 10 }
        while power > raw { power /= 10 }
        for factor in [1.0, 2, 5, 10] where power * factor >= raw { return power * factor }
        return power * 10
    }

    // MARK: - Header

    mutating func header() -> Double {
        text(28, 36, timeline.title, size: 20, weight: "bold", fill: "#111827", classes: "title")
        let seconds = Double((timeline.end - timeline.start).nanosecondsClamped) / 1e9
        let count = timeline.datagrams.count
        text(
            Self.right, 36, "\(count) datagram\(count == 1 ? "" : "s") in \(Self.fixed3(seconds)) s",
            size: 12,
            anchor: "end", fill: "#6b7280", classes: "summary")
        var line =
            "<text class=\"outcome\" x=\"28\" y=\"62\" font-size=\"14\" fill=\"#111827\" "
            + "xml:space=\"preserve\">"
        for (position, track) in timeline.tracks.enumerated() {
            if position > 0 { line += "<tspan fill=\"#9ca3af\">  ·  </tspan>" }
            let reason = track.closeReason ?? "did not close"
            line +=
                "<tspan font-weight=\"bold\" fill=\"\(color(track.lane))\">\(esc(name(track.lane))):</tspan>"
                + "<tspan fill=\"\(track.exchanged ? "#166534" : Self.red)\"> \(esc(reason))</tspan>"
        }
        body += line + "</text>\n"
        var bottom = 62.0
        // The facts, as many to a line as fit (about 150 characters of 13-pixel text).
        var lines: [String] = []
        for fact in timeline.diagnosis {
            if let last = lines.last, last.count + fact.count + 2 <= 150 {
                lines[lines.count - 1] = last + "; " + fact
            } else {
                lines.append(lines.isEmpty ? "why: " + fact : fact)
            }
        }
        for line in lines {
            bottom += 20
            text(28, bottom, line, size: 13, fill: Self.red, classes: "diagnosis")
        }
        return bottom
    }

    // MARK: - Distance and bearing

    mutating func distancePanel(top: Double) -> Double {
        let band = timeline.band
        let samples = timeline.tracks.flatMap(\.samples)
        // Far estimates (a peer walking away) are drawn at the top edge, so that the band keeps its
        // height: the axis ends at three times the band's far edge at most.
        let farthest = samples.map(\.distance).max() ?? 0
        // A capture's gate may name any finite band: the axis ends at a kilometre whatever it says.
        let highest = min(
            max(farthest, band.distance.upperBound + band.distanceHysteresis), band.distance.upperBound * 3,
            Self.longestDistanceAxis)
        let step = Self.niceStep(highest * 1.15 / 5)
        let ceiling = max((highest * 1.15 / step).rounded(.up), 1) * step
        return valuePanel(
            top: top, height: 170, title: "distance to the peer (cm), each device's estimate",
            ceiling: ceiling,
            step: step, band: band.distance,
            bandLabel: "band \(dec(band.distance.lowerBound))–"
                + "\(dec(band.distance.upperBound)) cm", kind: "distance", value: \.distance,
            note: farthest > ceiling ? "↑ estimates up to \(dec(farthest)) cm drawn at the top edge" : nil)
    }

    mutating func bearingPanel(top: Double) -> Double {
        let band = timeline.band
        let samples = timeline.tracks.flatMap(\.samples)
        let highest = min(
            max(samples.map(\.bearing).max() ?? 0, band.maximumBearing + band.bearingHysteresis), 180)
        let step = Self.niceStep(highest * 1.15 / 4)
        let ceiling = min(max((highest * 1.15 / step).rounded(.up), 1) * step, 180)
        return valuePanel(
            top: top, height: 110, title: "bearing of the peer (°)", ceiling: ceiling, step: step,
            band: 0...band.maximumBearing, bandLabel: "≤ \(dec(band.maximumBearing))°", kind: "bearing",
            value: \.bearing)
    }

    /// A panel of one estimate over time: the band, the gate's open spans, one line per device.
    mutating func valuePanel(
        top: Double, height: Double, title: String, ceiling: Double, step: Double, band: ClosedRange<Double>,
        bandLabel: String, kind: String, value: KeyPath<SessionTimeline.Sample, Double>, note: String? = nil
    ) -> Double {
        let bottom = top + height
        func y(_ value: Double) -> Double { bottom - min(max(value / ceiling, 0), 1) * height }
        text(Self.left, top - 8, title, size: 12, weight: "bold", fill: "#374151")
        rect(Self.left, top, Self.right - Self.left, height, fill: "#f9fafb", stroke: "#d1d5db")
        for track in timeline.tracks {
            for span in track.gateOpen {
                let start = x(span.start)
                let end = x(span.end ?? timeline.end)
                rect(
                    start, top, max(end - start, 1), height, fill: "#0ea5e9", opacity: 0.07,
                    classes: "gate-shade")
            }
        }
        let bandTop = y(band.upperBound)
        rect(
            Self.left, bandTop, Self.right - Self.left, y(band.lowerBound) - bandTop, fill: Self.bandFill,
            opacity: 0.16, classes: "band \(kind)")
        for edge in [band.lowerBound, band.upperBound] where edge > 0 {
            line(Self.left, y(edge), Self.right, y(edge), stroke: Self.bandFill, width: 1, dash: "5 3")
        }
        text(
            Self.right - 6, bandTop + 13, bandLabel, size: 11, anchor: "end", fill: "#166534",
            classes: "band-label")
        var mark = 0.0
        while mark <= ceiling + step / 2 {
            line(Self.left - 4, y(mark), Self.left, y(mark), stroke: "#6b7280", width: 1)
            text(Self.left - 8, y(mark) + 4, dec(mark), size: 10, anchor: "end", fill: "#6b7280")
            mark += step
        }
        for track in timeline.tracks where !track.samples.isEmpty {
            if Double(track.samples.count) > Self.right - Self.left {
                let points = track.samples.map { (x: x($0.time), y: y($0[keyPath: value])) }
                envelope(of: points, lane: track.lane, kind: kind)
                continue
            }
            var segments: [[SessionTimeline.Sample]] = []
            for sample in track.samples {
                if sample.startsLine || segments.isEmpty { segments.append([]) }
                segments[segments.count - 1].append(sample)
            }
            for segment in segments {
                let drawn = Self.thinned(segment.map { (x: x($0.time), y: y($0[keyPath: value])) })
                let points = drawn.map { "\(dec($0.x)),\(dec($0.y))" }.joined(separator: " ")
                body +=
                    "<polyline class=\"estimate \(kind)\" data-device=\"\(esc(name(track.lane)))\" "
                    + "points=\"\(points)\" fill=\"none\" stroke=\"\(color(track.lane))\" stroke-width=\"2\" "
                    + "stroke-linejoin=\"round\"/>\n"
                for point in drawn { circle(point.x, point.y, 2.2, fill: color(track.lane)) }
            }
        }
        if let note { text(Self.right - 6, top + 16, note, size: 11, anchor: "end", fill: "#4b5563") }
        if timeline.tracks.allSatisfy({ $0.samples.isEmpty }) {
            text(
                (Self.left + Self.right) / 2, top + height / 2 + 5, "no estimate: the devices never ranged",
                size: 13, anchor: "middle", fill: "#6b7280")
        }
        return bottom
    }

    /// A track of more estimates than the panel has pixel columns, drawn as one vertical stroke per
    /// column from its lowest estimate to its highest: lines and dots that dense show nothing more,
    /// and a day-long run had 7,000 lines and 50,000 dots (5 MB). A column without an estimate
    /// stays empty, so the gaps between sessions still show.
    mutating func envelope(of points: [(x: Double, y: Double)], lane: Int, kind: String) {
        var path = ""
        var column: (x: Double, low: Double, high: Double)?
        func flush() {
            guard let column else { return }
            // At least a pixel tall, so that a steady estimate still shows.
            let high = min(column.high, column.low - 1)
            path += "M\(dec(column.x)),\(dec(column.low))V\(dec(high))"
        }
        for drawn in points {
            let x = drawn.x.rounded(.down) + 0.5
            if let current = column, current.x == x {
                column = (x, max(current.low, drawn.y), min(current.high, drawn.y))
            } else {
                flush()
                column = (x, drawn.y, drawn.y)
            }
        }
        flush()
        body +=
            "<path class=\"estimate-envelope \(kind)\" data-device=\"\(esc(name(lane)))\" "
            + "data-estimates=\"\(points.count)\" d=\"\(path)\" fill=\"none\" "
            + "stroke=\"\(color(lane))\" stroke-width=\"1\" stroke-opacity=\"0.8\"/>\n"
    }

    /// `points` (in time order) with each run of more than two in one pixel column cut to its first,
    /// lowest, highest and last: the same picture, since a column shows no more, with at most four
    /// points per column (a 15-minute run ranges in bursts of 8 estimates a second, several to a
    /// column).
    static func thinned(_ points: [(x: Double, y: Double)]) -> [(x: Double, y: Double)] {
        var kept: [(x: Double, y: Double)] = []
        var start = points.startIndex
        while start < points.endIndex {
            let column = points[start].x.rounded(.down)
            var end = start + 1
            while end < points.endIndex && points[end].x.rounded(.down) == column { end += 1 }
            if end - start <= 2 {
                kept += points[start..<end]
            } else {
                let run = points.indices[start..<end]
                let lowest = run.min { points[$0].y < points[$1].y } ?? start
                let highest = run.max { points[$0].y < points[$1].y } ?? start
                // In the order drawn, each once.
                var chosen = [start, min(lowest, highest), max(lowest, highest), end - 1]
                chosen = chosen.indices.filter { $0 == 0 || chosen[$0] != chosen[$0 - 1] }.map { chosen[$0] }
                kept += chosen.map { points[$0] }
            }
            start = end
        }
        return kept
    }

    /// One row per device: when its proximity gate was open.
    mutating func gateStrip(top: Double) -> Double {
        var y = top
        for track in timeline.tracks {
            let label = "\(name(track.lane)) gate"
            text(Self.left - 8, y + 13, label, size: 11, anchor: "end", fill: color(track.lane))
            rect(Self.left, y, Self.right - Self.left, 18, fill: "#f3f4f6", stroke: "#e5e7eb")
            if track.gateOpen.isEmpty {
                text(Self.left + 8, y + 13, "never opened", size: 11, fill: Self.red, classes: "gate-never")
            }
            for span in track.gateOpen {
                let start = x(span.start)
                let end = x(span.end ?? timeline.end)
                body +=
                    "<rect class=\"gate-open\" data-device=\"\(esc(name(track.lane)))\" x=\"\(dec(start))\" "
                    + "y=\"\(dec(y))\" width=\"\(dec(max(end - start, 2)))\" height=\"18\" "
                    + "fill=\"\(color(track.lane))\" fill-opacity=\"0.75\"/>\n"
                if end - start > 40 {
                    text(start + 6, y + 13, "open", size: 11, weight: "bold", fill: "#ffffff")
                }
            }
            y += 24
        }
        return y - 6
    }

    // MARK: - Card transfer

    mutating func progressPanel(top: Double) -> Double {
        let height = 100.0
        let bottom = top + height
        let total = max(timeline.tracks.flatMap(\.progress).map(\.total).max() ?? 0, 1)
        func y(_ chunks: Int) -> Double { bottom - Double(chunks) / Double(total) * (height - 10) }
        text(
            Self.left, top - 8, "card transfer: chunks of each device's card acknowledged by the peer",
            size: 12,
            weight: "bold", fill: "#374151")
        rect(Self.left, top, Self.right - Self.left, height, fill: "#f9fafb", stroke: "#d1d5db")
        for chunks in [0, total] {
            text(Self.left - 8, y(chunks) + 4, String(chunks), size: 10, anchor: "end", fill: "#6b7280")
        }
        var legend: [String] = []
        for (position, track) in timeline.tracks.enumerated() {
            // Each device's line a little above the previous one's, so that equal lines both show.
            let lift = Double(position) * 3
            func y(_ chunks: Int) -> Double { bottom - Double(chunks) / Double(total) * (height - 10) - lift }
            guard let first = track.progress.first else { continue }
            var points = ["\(dec(x(first.time))),\(dec(y(0)))"]
            var level = 0
            for progress in track.progress {
                points.append("\(dec(x(progress.time))),\(dec(y(level)))")
                level = progress.acknowledged
                points.append("\(dec(x(progress.time))),\(dec(y(level)))")
            }
            let last = timeline.marks.last { $0.lane == track.lane }?.time ?? timeline.end
            points.append("\(dec(x(max(last, track.progress.last?.time ?? last)))),\(dec(y(level)))")
            body +=
                "<polyline class=\"progress\" data-device=\"\(esc(name(track.lane)))\" "
                + "points=\"\(points.joined(separator: " "))\" fill=\"none\" stroke=\"\(color(track.lane))\" "
                + "stroke-width=\"2.5\"/>\n"
            let retransmissions = track.retransmissions.count
            legend.append(
                "\(name(track.lane)): \(level)/\(track.progress.last?.total ?? 0)"
                    + (retransmissions > 0
                        ? ", \(retransmissions) retransmission\(retransmissions == 1 ? "" : "s")" : ""))
            for retransmission in track.retransmissions {
                let center = x(retransmission.time)
                body +=
                    "<path class=\"retransmission\" data-device=\"\(esc(name(track.lane)))\" "
                    + "d=\"M\(dec(center - 5)),\(dec(top + 2)) L\(dec(center + 5)),\(dec(top + 2)) "
                    + "L\(dec(center)),\(dec(top + 11)) Z\" fill=\"\(Self.red)\" stroke=\"\(color(track.lane))\"/>\n"
            }
        }
        if legend.isEmpty {
            text(
                (Self.left + Self.right) / 2, top + height / 2 + 5, "no card transfer started", size: 13,
                anchor: "middle", fill: "#6b7280", classes: "no-transfer")
        } else {
            let sentAgain = timeline.tracks.contains { !$0.retransmissions.isEmpty }
            text(
                Self.right, top - 8,
                legend.joined(separator: "  ·  ") + (sentAgain ? "   (▼ chunk sent again)" : ""),
                size: 11, anchor: "end", fill: "#374151", classes: "progress-legend")
        }
        return bottom
    }

    /// Vertical grid lines through the time panels and the seconds under them.
    mutating func timeAxis(top: Double, bottom: Double) {
        var seconds = 0.0
        var grid = ""
        while seconds <= span + tick / 2 {
            let position = Self.left + seconds / span * (Self.right - Self.left)
            grid +=
                "<line x1=\"\(dec(position))\" y1=\"\(dec(top))\" x2=\"\(dec(position))\" y2=\"\(dec(bottom))\" "
                + "stroke=\"#9ca3af\" stroke-opacity=\"0.35\" stroke-width=\"1\"/>\n"
            text(
                position, bottom + 16, "\(tickLabel(seconds)) s", size: 10, anchor: "middle", fill: "#6b7280")
            seconds += tick
        }
        body += "<g class=\"grid\">\n" + grid + "</g>\n"
    }

    func tickLabel(_ value: Double) -> String {
        // Ticks are multiples of 1, 2 or 5 × 10^k: three decimals at most for the spans replays have.
        guard value.isFinite, value.magnitude < 1e12 else { return String(value) }
        let thousandths = Int((value * 1000).rounded())
        var text = "\(thousandths / 1000)"
        var fraction = thousandths % 1000
        if fraction > 0 {
            var digits = ""
            var divisor = 100
            while fraction > 0 {
                digits += String(fraction / divisor)
                fraction %= divisor
                divisor /= 10
            }
            text += "." + digits
        }
        return text
    }

    // MARK: - Sequence chart

    enum Row {
        case datagram(SessionTimeline.Datagram)
        case mark(SessionTimeline.Mark)
        /// Datagrams of a card's transfer drawn as one line.
        case fold(Fold)
        /// The rows between the chart's first and last ones, past ``TimelineSVG/maximumRows``.
        case elision(Elision)

        var time: Instant {
            switch self {
            case .datagram(let datagram): datagram.sentAt
            case .mark(let mark): mark.time
            case .fold(let fold): fold.datagrams[0].sentAt
            case .elision(let elision): elision.start
            }
        }

        /// When the row's last datagram went, for the gap shown before the next row.
        var endTime: Instant {
            switch self {
            case .datagram, .mark: time
            case .fold(let fold): fold.datagrams.last?.sentAt ?? time
            case .elision(let elision): elision.end
            }
        }

        /// A datagram of bulk transfer that arrived as sent, once, or not at all: the kind a fold
        /// may hold.
        var isPlainTransfer: Bool {
            switch self {
            case .datagram(let datagram):
                guard datagram.isTransfer, datagram.rejection == nil, datagram.copies <= 1 else {
                    return false
                }
                switch datagram.fate {
                case .delivered, .notReceived: return true
                case .altered, .unknown: return false
                }
            case .mark, .fold, .elision: return false
            }
        }
    }

    /// Rows left out of the middle of a long chart: their datagrams and marks, in order.
    struct Elision {
        var datagrams: [SessionTimeline.Datagram] = []
        var marks: [SessionTimeline.Mark] = []
        var start: Instant
        var end: Instant
    }

    /// `rows` when they fit ``TimelineSVG/maximumRows``; else their first and last halves around one
    /// row that holds the rest.
    static func bounded(_ rows: [Row]) -> [Row] {
        guard rows.count > TimelineSVG.maximumRows else { return rows }
        let kept = TimelineSVG.maximumRows / 2
        let middle = rows[kept..<(rows.count - kept)]
        var elision = Elision(start: middle.first?.time ?? .zero, end: middle.last?.endTime ?? .zero)
        for row in middle {
            switch row {
            case .datagram(let datagram): elision.datagrams.append(datagram)
            case .mark(let mark): elision.marks.append(mark)
            case .fold(let fold): elision.datagrams += fold.datagrams
            case .elision(let inner): preconditionFailure("rows bounded twice, at \(inner.start)")
            }
        }
        return Array(rows[..<kept]) + [.elision(elision)] + Array(rows[(rows.count - kept)...])
    }

    /// Consecutive transfer datagrams, each delivered as sent or not received.
    struct Fold {
        var datagrams: [SessionTimeline.Datagram]
    }

    /// `rows` with each long run of plain transfer datagrams folded.
    static func folded(_ rows: [Row]) -> [Row] {
        var result: [Row] = []
        var index = rows.startIndex
        while index < rows.endIndex {
            guard rows[index].isPlainTransfer else {
                result.append(rows[index])
                index += 1
                continue
            }
            var end = index
            while end < rows.endIndex && rows[end].isPlainTransfer { end += 1 }
            let run = rows[index..<end]
            if run.count > TimelineSVG.foldThreshold, let first = run.first, let last = run.last {
                let middle = run.dropFirst().dropLast().compactMap { row -> SessionTimeline.Datagram? in
                    if case .datagram(let datagram) = row { datagram } else { nil }
                }
                result += [first, .fold(Fold(datagrams: middle)), last]
            } else {
                result += run
            }
            index = end
        }
        return result
    }

    mutating func sequenceChart(top: Double) -> Double {
        let lanes = timeline.lanes.count
        let first = 240.0
        let last = 740.0
        func laneX(_ lane: Int) -> Double {
            lanes <= 1 ? (first + last) / 2 : first + (last - first) * Double(lane) / Double(lanes - 1)
        }
        text(
            28, top - 30, "datagrams, in the order sent (time runs down)", size: 12, weight: "bold",
            fill: "#374151")
        text(28, top + 4, "time", size: 11, weight: "bold", fill: "#6b7280")
        text(Self.framesX, top + 4, "frames inside SECURE", size: 11, weight: "bold", fill: "#6b7280")
        for lane in timeline.lanes.indices {
            let label = name(lane)
            let size = lanes > 3 ? 11 : 13
            let width = Double(label.count * size) * 0.58 + 20
            rect(
                laneX(lane) - width / 2, top - 14, width, 24, fill: color(lane), radius: 5,
                classes: "lane-head")
            text(laneX(lane), top + 3, label, size: size, weight: "bold", anchor: "middle", fill: "#ffffff")
            if !timeline.lanes[lane].isCaptured {
                text(laneX(lane), top - 19, "not captured", size: 10, anchor: "middle", fill: Self.uncaptured)
            }
        }
        var rows: [Row] = timeline.datagrams.map(Row.datagram) + timeline.marks.map(Row.mark)
        rows = Self.bounded(
            Self.folded(
                rows.indices.sorted { a, b in
                    rows[a].time != rows[b].time ? rows[a].time < rows[b].time : a < b
                }.map { rows[$0] }))
        var y = top + 30
        var previous: Instant?
        var content = ""
        swap(&content, &body)
        for row in rows {
            if let previous, row.time - previous >= .milliseconds(250) {
                let gap = Double((row.time - previous).nanosecondsClamped) / 1e9
                text(
                    28, y + 4, "… \(dec(gap < 1 ? gap * 1000 : gap))\(gap < 1 ? " ms" : " s") later",
                    size: 10,
                    fill: "#9ca3af")
                y += 16
            }
            let seconds = Double((row.time - timeline.start).nanosecondsClamped) / 1e9
            text(28, y + 4, "\(Self.fixed3(seconds)) s", size: 10, fill: "#6b7280")
            switch row {
            case .datagram(let datagram): arrow(datagram, y: y, laneX: laneX)
            case .mark(let mark): markBox(mark, y: y, x: laneX(mark.lane))
            case .fold(let fold): y += foldLine(fold, y: y, laneX: laneX)
            case .elision(let elision): y += elisionBand(elision, y: y)
            }
            previous = row.endTime
            y += 18
        }
        swap(&content, &body)
        for lane in timeline.lanes.indices {
            line(laneX(lane), top + 10, laneX(lane), y, stroke: color(lane), width: 1.5, dash: "2 3")
        }
        body += content
        return y
    }

    mutating func arrow(_ datagram: SessionTimeline.Datagram, y: Double, laneX: (Int) -> Double) {
        let from = laneX(datagram.sender)
        let target: Double
        if let receiver = datagram.receiver, receiver != datagram.sender {
            target = laneX(receiver)
        } else {
            // Multicast nobody captured received: towards the middle of the chart.
            target = from + (from < 490 ? 90 : -90)
        }
        let lost = datagram.fate == .notReceived
        let to = lost ? from + (target - from) * 0.55 : target
        let stroke: String
        var label = datagram.type
        if datagram.copies > 1 { label += " ×\(datagram.copies)" }
        switch datagram.fate {
        case .delivered: stroke = color(datagram.sender)
        case .notReceived:
            stroke = Self.red
            label += " · not received"
        case .altered:
            stroke = Self.amber
            label += " · altered on the way"
        case .unknown: stroke = color(datagram.sender)
        }
        if let rejection = datagram.rejection { label += " · dropped: \(rejection)" }
        if let received = datagram.receivedAt, received - datagram.sentAt >= .milliseconds(50) {
            let delay = Double((received - datagram.sentAt).nanosecondsClamped) / 1e6
            label += " · +\(dec(delay)) ms"
        }
        var group =
            "<g class=\"datagram \(datagram.fate.rawValue)\" data-type=\"\(esc(datagram.type))\" "
            + "data-from=\"\(esc(name(datagram.sender)))\">"
        let direction: Double = to >= from ? 1 : -1
        let dash = lost || datagram.fate == .unknown ? " stroke-dasharray=\"5 3\"" : ""
        group +=
            "<line x1=\"\(dec(from))\" y1=\"\(dec(y))\" x2=\"\(dec(to - direction * 6))\" y2=\"\(dec(y))\" "
            + "stroke=\"\(stroke)\" stroke-width=\"1.6\"\(dash)/>"
        if lost {
            group +=
                "<path d=\"M\(dec(to - 4)),\(dec(y - 4)) L\(dec(to + 4)),\(dec(y + 4)) M\(dec(to - 4)),\(dec(y + 4)) "
                + "L\(dec(to + 4)),\(dec(y - 4))\" stroke=\"\(Self.red)\" stroke-width=\"2\"/>"
        } else {
            group +=
                "<path d=\"M\(dec(to)),\(dec(y)) L\(dec(to - direction * 8)),\(dec(y - 4)) "
                + "L\(dec(to - direction * 8)),\(dec(y + 4)) Z\" fill=\"\(stroke)\"/>"
        }
        let labelColor = datagram.fate == .delivered && datagram.rejection == nil ? "#111827" : stroke
        group +=
            "<text x=\"\(dec((from + to) / 2))\" y=\"\(dec(y - 3))\" font-size=\"10\" "
            + "text-anchor=\"middle\" fill=\"\(datagram.rejection == nil ? labelColor : Self.red)\">"
            + "\(esc(label))</text>"
        if !datagram.frames.isEmpty {
            var frames = datagram.frames.joined(separator: " ")
            if frames.count > 62 { frames = String(frames.prefix(61)) + "…" }
            group +=
                "<text x=\"\(dec(Self.framesX))\" y=\"\(dec(y + 4))\" font-size=\"10\" fill=\"#4b5563\">\(esc(frames))</text>"
        }
        body += group + "</g>\n"
    }

    /// A folded run: a band across the lanes it travelled between, saying how many datagrams it
    /// holds, until when, and how many were not received; on the right, one line per sender with
    /// its counts by kind. Returns the height it took.
    mutating func foldLine(_ fold: Fold, y: Double, laneX: (Int) -> Double) -> Double {
        let lines = senderLines(fold.datagrams) { sent in
            let chunks = sent.filter { $0.frames.contains { $0.hasPrefix("CARD_CHUNK") } }.count
            let sacks = sent.filter { $0.frames.contains { $0.hasPrefix("CARD_SACK") } }.count
            return (chunks > 0 ? ["\(chunks) CARD_CHUNK"] : []) + (sacks > 0 ? ["\(sacks) CARD_SACK"] : [])
        }
        let lost = fold.datagrams.filter { $0.fate == .notReceived }.count
        let end =
            fold.datagrams.last.map { Double(($0.sentAt - timeline.start).nanosecondsClamped) / 1e9 } ?? 0
        let lanes = Set(fold.datagrams.flatMap { [$0.sender] + ($0.receiver.map { [$0] } ?? []) }).sorted()
        let left = (lanes.first.map(laneX) ?? 240) - 12
        let right = (lanes.last.map(laneX) ?? 740) + 12
        let height = 14 * Double(max(lines.count, 1))
        var label = "⋮ \(fold.datagrams.count) more until \(Self.fixed3(end)) s"
        label += lost > 0 ? ", \(lost) not received" : ", all delivered"
        let group =
            "<g class=\"datagram-run\" data-count=\"\(fold.datagrams.count)\" data-not-received=\"\(lost)\">"
            + "<rect x=\"\(dec(left))\" y=\"\(dec(y - 7))\" width=\"\(dec(right - left))\" "
            + "height=\"\(dec(height))\" rx=\"3\" fill=\"#f3f4f6\" stroke=\"#d1d5db\"/>"
            + "<text x=\"\(dec((left + right) / 2))\" y=\"\(dec(y - 7 + height / 2 + 3.5))\" font-size=\"10\" "
            + "text-anchor=\"middle\" fill=\"\(lost > 0 ? Self.red : "#4b5563")\">\(esc(label))</text>"
        body += group + sideText(lines, y: y) + "</g>\n"
        return height - 14
    }

    /// One line per lane that sent `datagrams`, in the order they first did: `alice: 12 (…)`, with
    /// the `kinds` of what it sent and how many of them were not received.
    func senderLines(
        _ datagrams: [SessionTimeline.Datagram], kinds: ([SessionTimeline.Datagram]) -> [String]
    ) -> [String] {
        var senders: [Int] = []
        for datagram in datagrams where !senders.contains(datagram.sender) {
            senders.append(datagram.sender)
        }
        return senders.map { sender in
            let sent = datagrams.filter { $0.sender == sender }
            let lost = sent.filter { $0.fate == .notReceived }.count
            let counts = kinds(sent) + (lost > 0 ? ["\(lost) not received"] : [])
            return "\(name(sender)): \(sent.count) (\(counts.joined(separator: ", ")))"
        }
    }

    /// `lines` in the frames column, 14 pixels apart from the row at `y` down.
    func sideText(_ lines: [String], y: Double) -> String {
        lines.indices.map { index in
            "<text x=\"\(dec(Self.framesX))\" y=\"\(dec(y + 4 + 14 * Double(index)))\" font-size=\"10\" "
                + "fill=\"#4b5563\">\(esc(lines[index]))</text>"
        }.joined()
    }

    /// The rows a long chart leaves out: a band across every lane saying how many datagrams and
    /// events (marks) it holds and until when; on the right, one line per sender with its counts by
    /// kind and one with the commonest events. Returns the height it took beyond one row.
    mutating func elisionBand(_ elision: Elision, y: Double) -> Double {
        var lines = senderLines(elision.datagrams) { sent in
            Self.tally(sent.map(\.type)).map { "\($0.count) \($0.item)" }
        }
        let marks = Self.tally(elision.marks.map(\.text))
        if !marks.isEmpty {
            let shown = marks.prefix(Self.elidedMarkKinds).map { "\($0.item) ×\($0.count)" }
            let more = marks.count - shown.count
            lines.append(
                "events: " + shown.joined(separator: ", ") + (more > 0 ? ", \(more) other kinds" : ""))
        }
        lines = lines.flatMap { Self.wrapped($0, width: Self.frameColumnCharacters) }
        let lost = elision.datagrams.filter { $0.fate == .notReceived }.count
        let end = Double((elision.end - timeline.start).nanosecondsClamped) / 1e9
        let left = 228.0
        let right = 752.0
        let height = 14 * Double(max(lines.count, 2))
        var label =
            "⋮ \(elision.datagrams.count) datagrams and \(elision.marks.count) events until \(Self.fixed3(end)) s "
            + "not drawn"
        label += lost > 0 ? ", \(lost) not received" : ""
        let group =
            "<g class=\"rows-elided\" data-datagrams=\"\(elision.datagrams.count)\" "
            + "data-events=\"\(elision.marks.count)\" data-not-received=\"\(lost)\">"
            + "<rect x=\"\(dec(left))\" y=\"\(dec(y - 7))\" width=\"\(dec(right - left))\" "
            + "height=\"\(dec(height))\" rx=\"3\" fill=\"#f3f4f6\" stroke=\"#9ca3af\" stroke-dasharray=\"4 2\"/>"
            + "<text x=\"\(dec((left + right) / 2))\" y=\"\(dec(y - 7 + height / 2 - 3))\" font-size=\"10\" "
            + "text-anchor=\"middle\" fill=\"\(lost > 0 ? Self.red : "#4b5563")\">\(esc(label))</text>"
            + "<text x=\"\(dec((left + right) / 2))\" y=\"\(dec(y - 7 + height / 2 + 10))\" font-size=\"10\" "
            + "text-anchor=\"middle\" fill=\"#6b7280\">the chart draws its first and last "
            + "\(TimelineSVG.maximumRows / 2) rows; the panels above show the whole run</text>"
        body += group + sideText(lines, y: y) + "</g>\n"
        // A little more than a fold: the band's two lines of its own.
        return height - 14 + 6
    }

    /// Kinds of events an elided band names; the rest are counted.
    static let elidedMarkKinds = 4

    /// Characters of 10-pixel text that fit right of ``framesX``.
    static let frameColumnCharacters = 62

    /// `line` broken after commas into lines of at most `width` characters where it can be, each
    /// after the first indented.
    static func wrapped(_ line: String, width: Int) -> [String] {
        var lines: [String] = []
        var current = ""
        for piece in line.split(separator: ", ", omittingEmptySubsequences: false) {
            let addition = current.isEmpty ? String(piece) : current + ", " + piece
            if current.isEmpty || addition.count <= width {
                current = addition
            } else {
                lines.append(current + ",")
                current = "    " + piece
            }
        }
        lines.append(current)
        return lines
    }

    /// Each distinct item of `items` with how often it occurs, commonest first, ties in the order
    /// they first occur.
    static func tally(_ items: [String]) -> [(item: String, count: Int)] {
        var order: [String] = []
        var counts: [String: Int] = [:]
        for item in items {
            if counts[item] == nil { order.append(item) }
            counts[item, default: 0] += 1
        }
        let tallied = order.map { (item: $0, count: counts[$0] ?? 0) }
        return tallied.indices.sorted { a, b in
            tallied[a].count != tallied[b].count ? tallied[a].count > tallied[b].count : a < b
        }.map { tallied[$0] }
    }

    mutating func markBox(_ mark: SessionTimeline.Mark, y: Double, x: Double) {
        let fill: String
        let ink: String
        switch mark.kind {
        case .progress: (fill, ink) = ("#e0f2fe", "#075985")
        case .decision: (fill, ink) = ("#fef3c7", "#92400e")
        case .failure: (fill, ink) = ("#fee2e2", "#991b1b")
        case .success: (fill, ink) = ("#dcfce7", "#166534")
        }
        let width = Double(mark.text.count) * 6.3 + 14
        body +=
            "<g class=\"mark\" data-device=\"\(esc(name(mark.lane)))\"><rect x=\"\(dec(x - width / 2))\" "
            + "y=\"\(dec(y - 8))\" width=\"\(dec(width))\" height=\"16\" rx=\"8\" fill=\"\(fill)\" "
            + "stroke=\"\(ink)\" stroke-width=\"0.8\"/><text x=\"\(dec(x))\" y=\"\(dec(y + 4))\" "
            + "font-size=\"11\" text-anchor=\"middle\" fill=\"\(ink)\">\(esc(mark.text))</text></g>\n"
    }

    /// Seconds with three decimals: `1.042`.
    static func fixed3(_ value: Double) -> String {
        guard value.isFinite, value.magnitude < 1e12 else { return String(value) }
        let thousandths = Int((value * 1000).rounded())
        let fraction = String(thousandths % 1000)
        return "\(thousandths / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    // MARK: - Primitives

    func esc(_ text: String) -> String { TimelineSVG.escaped(text) }
    func dec(_ value: Double) -> String { TimelineSVG.decimal(value) }

    mutating func text(
        _ x: Double, _ y: Double, _ content: String, size: Int, weight: String? = nil, anchor: String? = nil,
        fill: String, classes: String? = nil
    ) {
        var element = "<text"
        if let classes { element += " class=\"\(classes)\"" }
        element += " x=\"\(dec(x))\" y=\"\(dec(y))\" font-size=\"\(size)\""
        if let weight { element += " font-weight=\"\(weight)\"" }
        if let anchor { element += " text-anchor=\"\(anchor)\"" }
        body += element + " fill=\"\(fill)\">\(esc(content))</text>\n"
    }

    mutating func rect(
        _ x: Double, _ y: Double, _ width: Double, _ height: Double, fill: String, stroke: String? = nil,
        opacity: Double? = nil, radius: Double? = nil, classes: String? = nil
    ) {
        var element = "<rect"
        if let classes { element += " class=\"\(classes)\"" }
        element += " x=\"\(dec(x))\" y=\"\(dec(y))\" width=\"\(dec(width))\" height=\"\(dec(height))\""
        if let radius { element += " rx=\"\(dec(radius))\"" }
        element += " fill=\"\(fill)\""
        if let opacity { element += " fill-opacity=\"\(opacity)\"" }
        if let stroke { element += " stroke=\"\(stroke)\"" }
        body += element + "/>\n"
    }

    mutating func line(
        _ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, stroke: String, width: Double,
        dash: String? = nil
    ) {
        var element =
            "<line x1=\"\(dec(x1))\" y1=\"\(dec(y1))\" x2=\"\(dec(x2))\" y2=\"\(dec(y2))\" stroke=\"\(stroke)\" "
            + "stroke-width=\"\(dec(width))\""
        if let dash { element += " stroke-dasharray=\"\(dash)\"" }
        body += element + "/>\n"
    }

    mutating func circle(_ x: Double, _ y: Double, _ radius: Double, fill: String) {
        body += "<circle cx=\"\(dec(x))\" cy=\"\(dec(y))\" r=\"\(dec(radius))\" fill=\"\(fill)\"/>\n"
    }
}
