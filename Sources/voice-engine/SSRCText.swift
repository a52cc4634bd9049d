/// `0x` and lowercase hex, the form `rtp-dump`'s JSON and every listing use.
func hexSSRC(_ ssrc: UInt32) -> String { "0x" + String(ssrc, radix: 16) }

/// An SSRC as a command line gives it: decimal or `0x` hex.
func parseSSRC(_ text: String) -> UInt32? {
    text.lowercased().hasPrefix("0x") ? UInt32(text.dropFirst(2), radix: 16) : UInt32(text)
}
