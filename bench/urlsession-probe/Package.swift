// swift-tools-version:6.0
// A measurement, not part of batchfetch: the floor of FoundationNetworking's URLSession on this
// machine — a data-task delegate that writes each body to its file and does nothing else — for
// one large file and for many small ones. bench/results/profile.md compares it with batchfetch
// and curl. Built and run by bench/urlsession-probe.sh.
import PackageDescription

let package = Package(
    name: "urlsession-probe",
    targets: [.executableTarget(name: "urlsession-probe")]
)
