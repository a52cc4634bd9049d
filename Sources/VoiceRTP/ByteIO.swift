// Big-endian reads and writes on raw buffers: the one place byte order is handled for RTP and RTCP.

extension UnsafeRawBufferPointer {
    @inlinable
    func be16(_ offset: Int) -> UInt16 {
        UInt16(self[offset]) << 8 | UInt16(self[offset + 1])
    }

    @inlinable
    func be24(_ offset: Int) -> UInt32 {
        UInt32(self[offset]) << 16 | UInt32(self[offset + 1]) << 8 | UInt32(self[offset + 2])
    }

    @inlinable
    func be32(_ offset: Int) -> UInt32 {
        UInt32(self[offset]) << 24 | UInt32(self[offset + 1]) << 16 | UInt32(self[offset + 2]) << 8
            | UInt32(self[offset + 3])
    }

    /// A rebased sub-buffer `[start, end)`; the caller has checked the bounds.
    @inlinable
    func sub(_ start: Int, _ end: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self[start..<end])
    }
}

extension UnsafeMutableRawBufferPointer {
    @inlinable
    func put8(_ value: UInt8, at offset: Int) {
        self[offset] = value
    }

    @inlinable
    func put16(_ value: UInt16, at offset: Int) {
        self[offset] = UInt8(truncatingIfNeeded: value >> 8)
        self[offset + 1] = UInt8(truncatingIfNeeded: value)
    }

    @inlinable
    func put24(_ value: UInt32, at offset: Int) {
        self[offset] = UInt8(truncatingIfNeeded: value >> 16)
        self[offset + 1] = UInt8(truncatingIfNeeded: value >> 8)
        self[offset + 2] = UInt8(truncatingIfNeeded: value)
    }

    @inlinable
    func put32(_ value: UInt32, at offset: Int) {
        self[offset] = UInt8(truncatingIfNeeded: value >> 24)
        self[offset + 1] = UInt8(truncatingIfNeeded: value >> 16)
        self[offset + 2] = UInt8(truncatingIfNeeded: value >> 8)
        self[offset + 3] = UInt8(truncatingIfNeeded: value)
    }

    /// Copies `bytes` to `offset` and returns the offset just past them.
    @inlinable
    func put(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int {
        if bytes.isEmpty { return offset }
        UnsafeMutableRawBufferPointer(rebasing: self[offset..<offset + bytes.count]).copyMemory(from: bytes)
        return offset + bytes.count
    }

    /// Copies `bytes` to `offset` and returns the offset just past them.
    @inlinable
    func put(_ bytes: [UInt8], at offset: Int) -> Int {
        bytes.withUnsafeBytes { put($0, at: offset) }
    }

    /// Writes `count` zero bytes at `offset` and returns the offset just past them.
    @inlinable
    func zero(_ count: Int, at offset: Int) -> Int {
        for i in 0..<count { self[offset + i] = 0 }
        return offset + count
    }
}

/// Serializes into a fresh array of exactly `length` bytes (a convenience for tests and control-plane code).
@usableFromInline
func makeBytes(_ length: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: length)
    let written = bytes.withUnsafeMutableBytes { body($0) }
    precondition(written == length, "serializer wrote \(written) bytes, expected \(length)")
    return bytes
}
