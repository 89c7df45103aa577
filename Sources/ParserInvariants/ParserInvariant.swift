#if canImport(Glibc)
import Glibc
#endif

/// A parser's promise about every input: what a fuzz target checks on each input libFuzzer
/// makes up, and what the unit tests check on the seeds and on every stored finding.
///
/// `check` throws when the parser breaks its promise; a crash in the parser is a finding too.
/// Inputs that the parser refuses are fine: refusing is what a strict parser does.
public protocol ParserInvariant: Sendable {
    /// The fuzz target's name, and the folder of its seeds and findings under `Fuzz/`.
    static var name: String { get }
    static func check(_ input: UnsafeRawBufferPointer) throws(InvariantViolation)
}

/// What went wrong, in words. Never holds the input: a provider answer may carry a token.
public struct InvariantViolation: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension ParserInvariant {
    /// What a fuzz target runs on each input: a broken promise aborts, so libFuzzer stores the
    /// input as a crash just as it does for a trap in the parser.
    public static func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
        let input = UnsafeRawBufferPointer(start: data.map(UnsafeRawPointer.init), count: data == nil ? 0 : size)
        do throws(InvariantViolation) {
            try check(input)
        } catch {
            var message = "\(name) invariant broken: \(error.description)\n"
            message.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
            abort()
        }
        return 0
    }

    /// `check` over a byte array (for the tests that replay stored inputs).
    public static func check(_ input: [UInt8]) throws(InvariantViolation) {
        let result: Result<Void, InvariantViolation> = input.withUnsafeBytes { bytes in
            do throws(InvariantViolation) {
                try check(bytes)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }
}

/// Every invariant, by name: one fuzz target each.
public enum ParserInvariants {
    public static let all: [any ParserInvariant.Type] = [
        RequestHeadInvariant.self,
        ResponseHeadInvariant.self,
        H2ResponseTranslationInvariant.self,
        H2RequestTranslationInvariant.self,
        ChunkedBodyInvariant.self,
        GRPCFirstMessageInvariant.self,
        RESTRouteInvariant.self,
        ProviderAnswerInvariant.self,
        HeaderFileInvariant.self,
        ServiceAccountKeyInvariant.self,
        AccessTokenAnswerInvariant.self,
        ADCFileInvariant.self,
        SignJwtAnswerInvariant.self,
        IDTokenAnswerInvariant.self,
        GenerateAccessTokenAnswerInvariant.self,
        SubjectTokenInvariant.self,
        ExecutableResponseInvariant.self,
        AWSCredentialsAnswerInvariant.self,
        CertificateConfigInvariant.self,
    ]
}

/// `guard condition else { throw ... }` in one line: `try expect(a == b, "why")`.
@inline(__always)
func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws(InvariantViolation) {
    if !condition { throw InvariantViolation(message()) }
}
