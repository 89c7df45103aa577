@testable import FleetTokenProxy

extension H2HeaderList {
    /// A list of the given fields, in order, as bytes (any byte at all, for the translation tests).
    init(testFields fields: [([UInt8], [UInt8])]) {
        self.init()
        for (name, value) in fields {
            name.withUnsafeBufferPointer { n in value.withUnsafeBufferPointer { v in append(name: ByteView(n), value: ByteView(v)) } }
        }
    }

    init(testFields fields: [(String, String)]) {
        self.init(testFields: fields.map { (Array($0.0.utf8), Array($0.1.utf8)) })
    }
}
