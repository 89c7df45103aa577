import LibFuzzerDriver
import ParserInvariants

/// Every input libFuzzer makes up goes through `CertificateConfigInvariant.check`. Exported under libFuzzer's
/// name too, because the toolchain's libFuzzer archive brings a `main` that refers to it.
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    CertificateConfigInvariant.fuzz(data, size)
}

runLibFuzzer(testOneInput)
