import FleetTokenProxy

/// `RESTRoute.classify` and `PercentDecoding`. The input is `method LF target`.
///
/// Promises: a routed call's provider and entity ids obey docs/CONTRACT.md §2 (no `/ : \ ? #`, no control
/// character, 1–64 characters) whatever the escapes; the provider is the decoded provider
/// segment; percent-encoding any text and decoding it gives the text back, and decoding never
/// turns two different spellings of invalid UTF-8 into one id.
public enum RESTRouteInvariant: ParserInvariant {
    public static let name = "rest-route"

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        let newline = input.firstIndex(of: 0x0A) ?? input.count
        let method = String(decoding: input[..<newline], as: UTF8.self)
        let target = String(decoding: input[min(newline + 1, input.count)...], as: UTF8.self)
        try checkRoute(method: method, target: target)
        try checkPercentDecoding(target)
    }

    static func checkRoute(method: String, target: String) throws(InvariantViolation) {
        guard case .success(let key) = RESTRoute.classify(method: method, target: target) else { return }
        try expect(ByteRules.isEntityID(key.provider), "routed to an invalid provider id")
        if key.type == .fleet {
            try expect(key.id == "*", "a fleet key with an id")
        } else {
            try expect(ByteRules.isEntityID(key.id), "routed to an invalid \(key.type) id")
        }
        // Split by byte, as the router does: split by `Character`, a combining mark after a
        // `/` makes one grapheme of the two, and the slash is no longer seen as a separator.
        let path = target.utf8.prefix { $0 != UInt8(ascii: "?") }
        let segments = path.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        try expect(
            segments.count >= 5 && segments[1].elementsEqual("v1".utf8) && segments[2].elementsEqual("providers".utf8),
            "routed a path outside /v1/providers/")
        // A slice between two ASCII slashes of valid UTF-8 is valid UTF-8 itself.
        let provider = String(decoding: segments[3], as: UTF8.self)
        try expect(PercentDecoding.decode(provider) == key.provider, "the provider is not the decoded provider segment")
    }

    static func checkPercentDecoding(_ text: String) throws(InvariantViolation) {
        var encoded = ""
        for (i, byte) in text.utf8.enumerated() {
            let hex = String(byte, radix: 16, uppercase: i % 2 == 0)
            encoded += byte < 16 ? "%0\(hex)" : "%\(hex)"
        }
        try expect(PercentDecoding.decode(encoded) == text, "decoding an encoded text changes it")
        try expect(PercentDecoding.decode(encoded, plusAsSpace: true) == text, "decoding an encoded query text changes it")

        if let decoded = PercentDecoding.decode(text) {
            try expect(decoded.utf8.count <= text.utf8.count, "decoding made the text longer")
            if !text.utf8.contains(UInt8(ascii: "%")) { try expect(decoded == text, "text without escapes changed") }
        }
        if let query = PercentDecoding.decode(text, plusAsSpace: true) {
            try expect(!text.utf8.contains(UInt8(ascii: "+")) || PercentDecoding.decode(text) != nil, "a + decides whether an escape is valid")
            try expect(query.utf8.count <= text.utf8.count, "decoding made the query longer")
        }
    }
}
