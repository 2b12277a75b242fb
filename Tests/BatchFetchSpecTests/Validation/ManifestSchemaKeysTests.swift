@testable import BatchFetchSpec
import Foundation
import Testing

/// The keys the decoder accepts are the keys schemas/manifest.schema.json describes, in both
/// directions, at every level: a key added to one and not the other fails here (the schema is
/// what editors complete and validate with; the decoder is what runs).
@Suite struct ManifestSchemaKeysTests {
    static var schema: [String: Any] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("schemas/manifest.schema.json")
        let data = (try? Data(contentsOf: url)) ?? Data()
        return ((try? JSONSerialization.jsonObject(with: data)) as? [String: Any]) ?? [:]
    }

    static func properties(_ object: Any?) -> Set<String> {
        Set(((object as? [String: Any])?["properties"] as? [String: Any])?.keys.map { $0 } ?? [])
    }

    static func definition(_ name: String) -> Any? {
        (schema["$defs"] as? [String: Any])?[name]
    }

    @Test func topLevelKeys() {
        #expect(!Self.schema.isEmpty)
        #expect(Self.properties(Self.schema) == Set(ManifestDecoder.topLevelKeys))
    }

    @Test func settingsDefaultsAndJobKeys() {
        let settings = Self.properties(Self.definition("settings"))
        #expect(settings == Set(ManifestDecoder.settingKeys))
        let defaults = Self.properties((Self.schema["properties"] as? [String: Any])?["defaults"])
        #expect(settings.union(defaults) == Set(ManifestDecoder.defaultsKeys))
        #expect(settings.union(Self.properties(Self.definition("job"))) == Set(ManifestDecoder.jobKeys))
    }

    @Test func nestedKeys() {
        let settings = (Self.definition("settings") as? [String: Any])?["properties"] as? [String: Any]
        #expect(Self.properties(settings?["tls"]) == Set(ManifestDecoder.tlsKeys))
        let job = (Self.definition("job") as? [String: Any])?["properties"] as? [String: Any]
        #expect(Self.properties(job?["form"]) == Set(ManifestDecoder.formKeys))
        let lists = ((Self.schema["properties"] as? [String: Any])?["jobs_from"] as? [String: Any])?["items"] as? [String: Any]
        let listForms = lists?["oneOf"] as? [Any] ?? []
        #expect(listForms.count == 2 && Self.properties(listForms.last) == Set(ManifestDecoder.listKeys))
    }
}
