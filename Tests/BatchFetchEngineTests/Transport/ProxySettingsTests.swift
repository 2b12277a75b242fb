@testable import BatchFetchEngine
@testable import BatchFetchNetwork
@testable import BatchFetchObjectStore
import Foundation
import Testing

/// The proxy environment, read as curl reads it.
@Suite struct ProxySettingsTests {
    @Test func schemesPickTheirProxyAndAllProxyFillsIn() {
        let settings = ProxySettings(environment: [
            "http_proxy": "http://proxy.corp:3128", "ALL_PROXY": "socks.corp", "no_proxy": "",
        ])
        #expect(settings.proxy(for: URL(string: "http://data.example/f")!) == .init(host: "proxy.corp", port: 3128, credentials: nil))
        // No https_proxy: all_proxy, with curl's default port.
        #expect(settings.proxy(for: URL(string: "https://data.example/f")!) == .init(host: "socks.corp", port: 1080, credentials: nil))
    }

    @Test func credentialsAndUpperCaseNames() {
        let settings = ProxySettings(environment: ["HTTPS_PROXY": "http://me:p%40ss@proxy.corp:8080"])
        #expect(settings.proxy(for: URL(string: "https://x.example/")!) == .init(host: "proxy.corp", port: 8080, credentials: "me:p@ss"))
        #expect(settings.proxy(for: URL(string: "http://x.example/")!) == nil)
    }

    @Test func noProxyExcludesHostsAndDomains() {
        let settings = ProxySettings(environment: ["http_proxy": "proxy:3128", "no_proxy": "localhost, .internal.corp,example.org:8080"])
        #expect(settings.proxy(for: URL(string: "http://localhost/f")!) == nil)
        #expect(settings.proxy(for: URL(string: "http://a.internal.corp/f")!) == nil)
        #expect(settings.proxy(for: URL(string: "http://internal.corp/f")!) == nil)
        #expect(settings.proxy(for: URL(string: "http://cdn.example.org/f")!) == nil)
        #expect(settings.proxy(for: URL(string: "http://notexample.org/f")!) != nil)
        #expect(ProxySettings(environment: ["http_proxy": "proxy:3128", "no_proxy": "*"]).proxy(for: URL(string: "http://a/")!) == nil)
    }
}
