/// When each period of a clocked device is due, in exact integer arithmetic (no rounding drift over hours).
///
/// Period `k` (0-based) covers frames `[k·P, (k+1)·P)` and is due once the time since the start reaches the
/// end of those frames, `(k+1)·P·10⁹ / rate` nanoseconds.
struct PeriodSchedule: Sendable, Hashable {
    let sampleRate: Int
    let periodFrames: Int

    init(sampleRate: Int, periodFrames: Int) {
        precondition(sampleRate > 0 && periodFrames > 0, "a schedule needs a positive rate and period")
        self.sampleRate = sampleRate
        self.periodFrames = periodFrames
    }

    /// Periods whose end has been reached `elapsedNanoseconds` after the start.
    func periodsDue(elapsedNanoseconds: Int64) -> Int64 {
        guard elapsedNanoseconds > 0 else { return 0 }
        let product = UInt64(elapsedNanoseconds).multipliedFullWidth(by: UInt64(sampleRate))
        let divisor = UInt64(1_000_000_000) * UInt64(periodFrames)
        guard product.high < divisor else { return Int64.max }
        return Int64(divisor.dividingFullWidth(product).quotient)
    }

    /// Nanoseconds after the start at which period `index` is due (rounded up, so it is never early).
    func endOfPeriod(_ index: Int64) -> Int64 {
        precondition(index >= 0, "period index must not be negative")
        let frames = UInt64(index + 1) * UInt64(periodFrames)
        let product = frames.multipliedFullWidth(by: 1_000_000_000)
        let (q, r) = UInt64(sampleRate).dividingFullWidth(product)
        return Int64(q) + (r > 0 ? 1 : 0)
    }
}
