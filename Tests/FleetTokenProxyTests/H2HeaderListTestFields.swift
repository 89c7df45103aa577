@testable import FleetTokenProxy

extension H2HeaderList {
    init(testFields fields: [(String, String)]) {
        self.init(fields.map { (Array($0.0.utf8), Array($0.1.utf8)) })
    }
}
