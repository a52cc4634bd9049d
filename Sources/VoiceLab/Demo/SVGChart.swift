import VoiceEngine
import Foundation

/// A line chart rendered as inline SVG, so reports are one self-contained HTML file with no scripts or downloads.
public struct SVGChart: Sendable {
    /// One line of the chart.
    public struct Series: Sendable {
        public var name: String
        /// A CSS colour.
        public var color: String
        public var points: [(x: Double, y: Double)]
        /// Drawn as steps (values that hold until the next point) instead of straight segments.
        public var stepped: Bool

        public init(name: String, color: String, points: [(x: Double, y: Double)], stepped: Bool = false) {
            self.name = name
            self.color = color
            self.points = points
            self.stepped = stepped
        }
    }

    public var title: String
    public var xLabel: String
    public var yLabel: String
    public var series: [Series]
    public var width = 720.0
    public var height = 240.0

    public init(title: String, xLabel: String, yLabel: String, series: [Series]) {
        self.title = title
        self.xLabel = xLabel
        self.yLabel = yLabel
        self.series = series
    }

    /// The chart as an `<svg>` element.
    public func render() -> String {
        let left = 56.0, right = 12.0, top = 28.0, bottom = 40.0
        let plotWidth = width - left - right
        let plotHeight = height - top - bottom
        let all = series.flatMap(\.points).filter { $0.x.isFinite && $0.y.isFinite }
        let xMin = all.map(\.x).min() ?? 0
        var xMax = all.map(\.x).max() ?? 1
        var yMin = min(0, all.map(\.y).min() ?? 0)
        var yMax = all.map(\.y).max() ?? 1
        if xMax <= xMin { xMax = xMin + 1 }
        if yMax <= yMin { yMax = yMin + 1 }
        let yStep = Self.niceStep((yMax - yMin) / 4)
        yMin = (yMin / yStep).rounded(.down) * yStep
        yMax = (yMax / yStep).rounded(.up) * yStep
        func px(_ x: Double) -> Double { left + (x - xMin) / (xMax - xMin) * plotWidth }
        func py(_ y: Double) -> Double { top + (1 - (y - yMin) / (yMax - yMin)) * plotHeight }

        var svg = """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(Int(width)) \(Int(height))" width="\(Int(width))" \
            height="\(Int(height))" font-family="sans-serif" font-size="11">
            <text x="\(left)" y="16" font-size="13" font-weight="bold">\(Self.escape(title))</text>
            <rect x="\(left)" y="\(top)" width="\(plotWidth)" height="\(plotHeight)" fill="#fafafa" stroke="#ccc"/>

            """
        var tick = yMin
        while tick <= yMax + yStep / 2 {
            let y = py(tick)
            svg += "<line x1=\"\(left)\" y1=\"\(f(y))\" x2=\"\(left + plotWidth)\" y2=\"\(f(y))\" stroke=\"#e4e4e4\"/>"
            svg += "<text x=\"\(left - 4)\" y=\"\(f(y + 4))\" text-anchor=\"end\">\(Self.label(tick))</text>\n"
            tick += yStep
        }
        let xStep = Self.niceStep((xMax - xMin) / 6)
        var xTick = (xMin / xStep).rounded(.up) * xStep
        while xTick <= xMax + xStep / 1000 {
            svg +=
                "<text x=\"\(f(px(xTick)))\" y=\"\(f(top + plotHeight + 14))\" text-anchor=\"middle\">\(Self.label(xTick))</text>\n"
            xTick += xStep
        }
        svg +=
            "<text x=\"\(f(left + plotWidth / 2))\" y=\"\(f(height - 6))\" text-anchor=\"middle\">\(Self.escape(xLabel))</text>\n"
        svg +=
            "<text transform=\"translate(12 \(f(top + plotHeight / 2))) rotate(-90)\" text-anchor=\"middle\">\(Self.escape(yLabel))</text>\n"
        for (index, line) in series.enumerated() {
            var path = ""
            var previousY: Double?
            for point in line.points where point.x.isFinite && point.y.isFinite {
                if path.isEmpty {
                    path = "M\(f(px(point.x))) \(f(py(point.y)))"
                } else {
                    if line.stepped, let previousY { path += " L\(f(px(point.x))) \(f(py(previousY)))" }
                    path += " L\(f(px(point.x))) \(f(py(point.y)))"
                }
                previousY = point.y
            }
            svg += "<path d=\"\(path)\" fill=\"none\" stroke=\"\(line.color)\" stroke-width=\"1.5\"/>\n"
            let legendX = left + 8 + Double(index) * 150
            svg +=
                "<line x1=\"\(f(legendX))\" y1=\"\(f(top + 10))\" x2=\"\(f(legendX + 16))\" y2=\"\(f(top + 10))\" stroke=\"\(line.color)\" stroke-width=\"2\"/>"
            svg += "<text x=\"\(f(legendX + 20))\" y=\"\(f(top + 14))\">\(Self.escape(line.name))</text>\n"
        }
        return svg + "</svg>"
    }

    private func f(_ v: Double) -> String { String(format: "%.1f", v) }

    /// 1, 2 or 5 times a power of ten, at least `raw`.
    static func niceStep(_ raw: Double) -> Double {
        guard raw > 0, raw.isFinite else { return 1 }
        let magnitude = pow(10, (log10(raw)).rounded(.down))
        for factor in [1.0, 2, 5, 10] where factor * magnitude >= raw { return factor * magnitude }
        return 10 * magnitude
    }

    static func label(_ v: Double) -> String {
        abs(v - v.rounded()) < 1e-9 ? String(Int(v.rounded())) : String(format: "%.2g", v)
    }

    /// Escapes text for SVG and HTML.
    public static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

/// A one-file HTML report: a title, tables of figures and inline SVG charts.
public struct HTMLReport: Sendable {
    public var title: String
    public var sections: [String] = []

    public init(title: String) { self.title = title }

    /// Adds a heading and a two-or-more-column table.
    public mutating func addTable(heading: String, columns: [String], rows: [[String]]) {
        var html = "<h2>\(SVGChart.escape(heading))</h2>\n<table>\n<tr>"
        html += columns.map { "<th>\(SVGChart.escape($0))</th>" }.joined() + "</tr>\n"
        for row in rows { html += "<tr>" + row.map { "<td>\(SVGChart.escape($0))</td>" }.joined() + "</tr>\n" }
        sections.append(html + "</table>")
    }

    public mutating func addChart(_ chart: SVGChart) { sections.append("<div class=\"chart\">\(chart.render())</div>") }

    public mutating func addParagraph(_ text: String) { sections.append("<p>\(SVGChart.escape(text))</p>") }

    public func render() -> String {
        """
        <!DOCTYPE html>
        <html lang="en"><head><meta charset="utf-8"><title>\(SVGChart.escape(title))</title>
        <style>
        body { font-family: sans-serif; margin: 24px; color: #222; max-width: 980px; }
        table { border-collapse: collapse; margin-bottom: 12px; display: block; overflow-x: auto; font-size: 13px; }
        th, td { border: 1px solid #ddd; padding: 4px 10px; text-align: right; }
        th:first-child, td:first-child { text-align: left; }
        th { background: #f0f0f0; }
        .chart { margin: 8px 0 16px; }
        </style></head><body>
        <h1>\(SVGChart.escape(title))</h1>
        \(sections.joined(separator: "\n"))
        </body></html>

        """
    }
}
