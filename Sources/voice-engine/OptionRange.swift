import ArgumentParser

/// The valid range of a numeric option, checked in a command's `validate()` before any work starts: a value
/// outside it — inf, nan, negative, zero or huge wherever those make no sense — is a usage error (exit 64) that
/// names the option, the value and the range, e.g. `--jitter inf: must be within 0...1000 ms`.
struct OptionRange {
    let option: String
    let range: ClosedRange<Double>
    let unit: String

    init(_ option: String, _ range: ClosedRange<Double>, _ unit: String) {
        self.option = option
        self.range = range
        self.unit = unit
    }

    /// Throws the usage error unless `value` is nil (not given) or a finite number within the range.
    func check(_ value: Double?) throws {
        guard let value else { return }
        guard value.isFinite, range.contains(value) else { throw ValidationError(message(value.description)) }
    }

    /// The same for an integer option.
    func check(_ value: Int?) throws {
        guard let value else { return }
        guard range.contains(Double(value)) else { throw ValidationError(message(String(value))) }
    }

    private func message(_ value: String) -> String {
        func number(_ x: Double) -> String { x == x.rounded() && abs(x) < 1e15 ? String(Int(x)) : String(x) }
        let bounds = "\(number(range.lowerBound))...\(number(range.upperBound))"
        return "\(option) \(value): must be within \(bounds)" + (unit.isEmpty ? "" : " \(unit)")
    }
}
