/// Samples or bytes allocated once and never moved, resized or copied: the preallocated buffers the audio path
/// works on. Benchmark loops read `pointer` into a local before looping, so the measured loop holds no array (no
/// copy-on-write or uniqueness checks) and no class access beyond the one the wrapper itself does.
public final class FixedBuffer<Element: BitwiseCopyable> {
    /// The storage; valid for the lifetime of this object.
    public let pointer: UnsafeMutableBufferPointer<Element>

    /// A buffer of `count` elements, all `value`.
    public init(count: Int, repeating value: Element) {
        pointer = .allocate(capacity: count)
        pointer.initialize(repeating: value)
    }

    /// A buffer holding a copy of `elements`.
    public init(copying elements: [Element]) {
        pointer = .allocate(capacity: elements.count)
        _ = pointer.initialize(from: elements)
    }

    deinit { pointer.deallocate() }

    public var count: Int { pointer.count }

    /// A read-only view of `count` elements starting at `offset`.
    @inlinable
    public func slice(_ offset: Int, _ count: Int) -> UnsafeBufferPointer<Element> {
        UnsafeBufferPointer(start: pointer.baseAddress! + offset, count: count)
    }
}
