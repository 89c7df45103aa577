import FleetTokenProxy

/// A gRPC call's first bytes through everything that reads them: `GRPCMessageFrame`, then
/// `GzipInflate` for a compressed message, `ProtobufReader` and `GRPCRoute.classify`. The first
/// input byte picks the method (docs/CONTRACT.md §3 gRPC table), the rest is the request stream.
///
/// Promises: a complete frame's payload lies inside the input and is as long as its prefix
/// says; inflating never passes its bound; the protobuf reader never reports a field or value
/// outside the bytes it was given, at any depth; a routed call names a valid provider and
/// entity id that the message really holds.
public enum GRPCFirstMessageInvariant: ParserInvariant {
    public static let name = "grpc-first-message"
    static let maxMessage = 1 << 16

    public static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation) {
        guard let selector = input.first else { return }
        let rules = GRPCMethodTable.rules
        let rule = rules[Int(selector) % rules.count]
        try expect(GRPCRoute.rule(forPath: rule.path) === rule, "\(rule.path) does not find its own rule")
        let stream = UnsafeRawBufferPointer(rebasing: input.dropFirst())

        switch GRPCMessageFrame.firstMessage(in: stream, maxLength: maxMessage) {
        case .needMore(let total):
            try expect(total > stream.count && total <= GRPCMessageFrame.headerLength + maxMessage, "needMore(\(total)) with \(stream.count) bytes")
        case .invalid:
            return
        case .complete(let compressed, let payload):
            try expect(payload.lowerBound == 5 && payload.upperBound <= stream.count, "payload \(payload) outside \(stream.count) bytes")
            let declared = Int(stream[1]) << 24 | Int(stream[2]) << 16 | Int(stream[3]) << 8 | Int(stream[4])
            try expect(payload.count == declared && compressed == (stream[0] == 1), "payload does not match the prefix")
            let message = UnsafeRawBufferPointer(rebasing: stream[payload])
            if compressed {
                guard case .success(var inflated) = GzipInflate.inflate(message, maxOutput: maxMessage) else { return }
                try expect(inflated.count <= maxMessage, "inflated past the bound")
                let routed: Result<Void, InvariantViolation> = inflated.withUnsafeMutableBytes { bytes in
                    do throws(InvariantViolation) {
                        try route(rule, UnsafeRawBufferPointer(bytes))
                        return .success(())
                    } catch {
                        return .failure(error)
                    }
                }
                try routed.get()
            } else {
                try route(rule, message)
            }
        }
    }

    static func route(_ rule: GRPCRouteRule, _ message: UnsafeRawBufferPointer) throws(InvariantViolation) {
        try walk(message, origin: 0, depth: 0)
        for path in [[1], [3], [3, 1], [2, 1, 1]] {
            if case .found(let value) = try? ProtobufReader.lengthDelimitedField(at: path[...], in: message) {
                try expect(inside(value, message), "field \(path) lies outside the message")
            }
        }
        guard case .success(let key) = GRPCRoute.classify(rule: rule, message: message) else { return }
        try expect(key.type == rule.entityType || key.type == .fleet, "\(rule.method) routed to a \(key.type)")
        try expect(ByteRules.isEntityID(key.provider), "\(rule.method) routed to an invalid provider id")
        try expect(contains(message, "providers/\(key.provider)"), "the provider is not in the message")
        if key.type == .fleet {
            try expect(key.id == "*", "a fleet key with an id")
        } else {
            try expect(ByteRules.isEntityID(key.id), "\(rule.method) routed to an invalid entity id")
            try expect(contains(message, key.id), "the entity id is not in the message")
        }
    }

    /// Reads every field, and every length-delimited value as an embedded message, a few levels
    /// deep; each must lie inside the bytes its reader was given.
    static func walk(_ bytes: UnsafeRawBufferPointer, origin: Int, depth: Int) throws(InvariantViolation) {
        var reader = ProtobufReader(bytes, origin: origin)
        var previousEnd = origin
        while true {
            let field: ProtobufReader.Field?
            do { field = try reader.next() } catch { return }
            guard let field else { break }
            try expect(field.number >= 1 && field.number <= ProtobufReader.maxFieldNumber, "field number \(field.number)")
            try expect(field.offset >= previousEnd && field.offset < origin + bytes.count, "field at \(field.offset) outside \(origin)..<\(origin + bytes.count)")
            try expect(reader.offset <= bytes.count, "reader offset \(reader.offset) past \(bytes.count) bytes")
            previousEnd = origin + reader.offset
            if case .lengthDelimited(let value) = field.value {
                try expect(inside(value, bytes), "value of field \(field.number) outside its message")
                let start = value.baseAddress.map { $0 - bytes.baseAddress! } ?? 0
                try expect(field.valueOffset == origin + start, "value offset \(field.valueOffset) is not where the value is")
                try expect(origin + reader.offset == field.valueOffset + value.count, "value does not end where the reader is")
                if depth < 4 { try walk(value, origin: field.valueOffset, depth: depth + 1) }
            }
        }
        try expect(reader.isAtEnd, "reader ended before the end without an error")
    }

    static func inside(_ part: UnsafeRawBufferPointer, _ whole: UnsafeRawBufferPointer) -> Bool {
        guard let p = part.baseAddress else { return part.isEmpty }
        guard let w = whole.baseAddress else { return false }
        return p >= w && p + part.count <= w + whole.count
    }

    static func contains(_ message: UnsafeRawBufferPointer, _ text: String) -> Bool {
        let needle = Array(text.utf8)
        guard !needle.isEmpty, needle.count <= message.count else { return needle.isEmpty }
        for start in 0...(message.count - needle.count) where message[start] == needle[0] {
            if message[start..<(start + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }
}
