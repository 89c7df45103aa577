import LibFuzzerDriver
import ParserInvariants

/// Every input libFuzzer makes up goes through `ExecutableResponseInvariant.check`. Exported under libFuzzer's
/// name too, because the toolchain's libFuzzer archive brings a `main` that refers to it.
@_cdecl("LLVMFuzzerTestOneInput")
func testOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    ExecutableResponseInvariant.fuzz(data, size)
}

runLibFuzzer(testOneInput)
