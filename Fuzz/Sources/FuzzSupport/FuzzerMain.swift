import CFuzzerDriver

#if canImport(Glibc)
import Glibc
#endif

/// Runs libFuzzer with this process's command line and `callback` as the target, then exits with its status.
///
/// Each fuzz target's `@main` calls this with its `LLVMFuzzerTestOneInput` (see CFuzzerDriver.h for why the
/// targets do not use libFuzzer's own `main`).
public func runLibFuzzer(_ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, callback))
}
