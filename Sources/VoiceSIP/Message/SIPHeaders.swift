/// The header fields of a message in their order, with names in their canonical long form: compact forms
/// (`v`, `f`, `t`, `i`, `m`, `l`, `c`, …; RFC 3261 §7.3.3) and any case of a known name map to one spelling, so that
/// lookups and serialization need not care how the peer wrote them. Unknown names are kept as received.
public struct SIPHeaders: Equatable, Sendable, Sequence {
    public struct Field: Equatable, Sendable {
        public var name: String
        /// The value with folding undone (each line break and the whitespace around it became one space) and with
        /// leading and trailing whitespace removed.
        public var value: String

        public init(name: String, value: String) {
            self.name = SIPHeaders.canonicalName(name)
            self.value = value
        }
    }

    public private(set) var fields: [Field] = []

    public init() {}

    public init(_ fields: [(String, String)]) {
        self.fields = fields.map { Field(name: $0.0, value: $0.1) }
    }

    public func makeIterator() -> IndexingIterator<[Field]> { fields.makeIterator() }
    public var count: Int { fields.count }

    public mutating func add(_ name: String, _ value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every field named `name` by one field with `value` (at the place of the first), or appends it.
    public mutating func replace(_ name: String, with value: String) {
        let canonical = Self.canonicalName(name)
        if let first = fields.firstIndex(where: { $0.name.caseInsensitiveEquals(canonical) }) {
            fields[first].value = value
            var index = fields.index(after: first)
            while index < fields.endIndex {
                if fields[index].name.caseInsensitiveEquals(canonical) { fields.remove(at: index) } else { index += 1 }
            }
        } else {
            add(canonical, value)
        }
    }

    /// Sets the value of the field at `index` of `fields`.
    public mutating func setValue(_ value: String, at index: Int) {
        fields[index].value = value
    }

    public mutating func remove(_ name: String) {
        let canonical = Self.canonicalName(name)
        fields.removeAll { $0.name.caseInsensitiveEquals(canonical) }
    }

    /// Inserts a field before all others of any name (a proxy's or a client's new top Via).
    public mutating func prepend(_ name: String, _ value: String) {
        fields.insert(Field(name: name, value: value), at: 0)
    }

    /// The values of every field named `name` (long or compact form, any case), in order.
    public subscript(_ name: String) -> [String] {
        let canonical = Self.canonicalName(name)
        return fields.compactMap { $0.name.caseInsensitiveEquals(canonical) ? $0.value : nil }
    }

    /// The value of the first field named `name`.
    public func first(_ name: String) -> String? {
        let canonical = Self.canonicalName(name)
        return fields.first { $0.name.caseInsensitiveEquals(canonical) }?.value
    }

    /// The long name of a compact form, or the canonical spelling of a known name; other names unchanged.
    public static func canonicalName(_ name: String) -> String {
        if name.utf8.count == 1, let long = compactForms[name.lowercased()] { return long }
        return knownNames[name.lowercased()] ?? name
    }

    /// RFC 3261 §7.3.3 and the compact forms later RFCs registered (IANA "Header Fields" registry).
    static let compactForms: [String: String] = [
        "a": "Accept-Contact", "b": "Referred-By", "c": "Content-Type", "d": "Request-Disposition",
        "e": "Content-Encoding", "f": "From", "i": "Call-ID", "j": "Reject-Contact", "k": "Supported",
        "l": "Content-Length", "m": "Contact", "n": "Identity-Info", "o": "Event", "r": "Refer-To",
        "s": "Subject", "t": "To", "u": "Allow-Events", "v": "Via", "x": "Session-Expires", "y": "Identity"
    ]

    static let knownNames: [String: String] = Dictionary(
        ([
            "Accept", "Accept-Encoding", "Accept-Language", "Alert-Info", "Allow", "Authentication-Info",
            "Authorization", "Call-ID", "Call-Info", "Contact", "Content-Disposition", "Content-Encoding",
            "Content-Language", "Content-Length", "Content-Type", "CSeq", "Date", "Error-Info", "Expires", "From",
            "In-Reply-To", "Max-Forwards", "MIME-Version", "Min-Expires", "Organization", "Priority",
            "Proxy-Authenticate", "Proxy-Authorization", "Proxy-Require", "Record-Route", "Reply-To", "Require",
            "Retry-After", "Route", "Server", "Subject", "Supported", "Timestamp", "To", "Unsupported",
            "User-Agent", "Via", "Warning", "WWW-Authenticate", "RAck", "RSeq", "Min-SE", "Path", "Service-Route",
            "Reason"
        ] + compactForms.values).map { ($0.lowercased(), $0) },
        uniquingKeysWith: { first, _ in first }
    )
}
