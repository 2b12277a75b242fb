@testable import BatchFetchEngine
@testable import BatchFetchFiles
@testable import BatchFetchObjectStore
import Testing

/// The one file identity and its named comparisons: what each can and cannot see.
@Suite struct FileIdentityTests {
    let base = FileIdentity(device: 1, inode: 2, size: 3, mtimeNanoseconds: 4, ctimeNanoseconds: 5)

    @Test func eachComparisonSeesWhatItSays() {
        var otherMount = base
        otherMount.device = 9
        var touched = base
        touched.ctimeNanoseconds = 6
        var written = base
        written.mtimeNanoseconds = 7
        var replaced = base
        replaced.inode = 8
        // The state store's: a remount (NFS) and a chmod are the same file; a write is not.
        #expect(base.matches(otherMount, by: .content) && base.matches(touched, by: .content))
        #expect(!base.matches(written, by: .content) && !base.matches(replaced, by: .content))
        // Trees': a touch that put mtime back shows.
        #expect(base.matches(otherMount, by: .contentAndTouches) && !base.matches(touched, by: .contentAndTouches))
        // The cache's: only this very file on this very mount.
        #expect(!base.matches(otherMount, by: .exact) && !base.matches(touched, by: .exact) && base.matches(base, by: .exact))
    }
}
