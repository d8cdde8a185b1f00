import StarlineCore
import StarlineCrypto

/// The encrypted search index (`search_tokens`): for every word of a note's title, body, tags and
/// attachment names, a blind token — keyed BLAKE2b-128 of the normalised word under the epoch's index
/// key — beside the record id. A query computes the tokens of its words and decrypts only the records
/// that have all of them. Without the key the tokens reveal which records share a word and how many words
/// a record has, not the words.
enum SearchIndex {
    static let tokenBytes = 16

    /// The normalised words of `text`: maximal runs of letters and digits, lowercased; each Han, kana or
    /// Hangul character is a word of its own (those scripts do not separate words with spaces, so a query
    /// finds a note containing each of its characters). No Unicode normalisation: composed and decomposed
    /// forms of one letter are different words.
    static func words(_ text: String) -> [String] {
        var words: [String] = []
        var current = String.UnicodeScalarView()
        func flush() {
            if !current.isEmpty { words.append(String(current).lowercased()) }
            current = String.UnicodeScalarView()
        }
        for scalar in text.unicodeScalars {
            if isIdeographic(scalar) {
                flush()
                words.append(String(scalar))
            } else if scalar.properties.isAlphabetic || scalar.properties.numericType != nil || isMark(scalar) && !current.isEmpty {
                current.append(scalar)
            } else {
                flush()
            }
        }
        flush()
        return words
    }

    /// Combining marks continue a word (the accent of a decomposed "é").
    static func isMark(_ s: Unicode.Scalar) -> Bool {
        switch s.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark: true
        default: false
        }
    }

    static func isIdeographic(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x3040...0x30FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xF900...0xFAFF, 0xAC00...0xD7AF, 0x20000...0x2FA1F: true
        default: false
        }
    }

    /// Every distinct word of a note, in the order first seen.
    static func words(of payload: NotePayload) -> [String] {
        var seen = Set<String>()
        var out: [String] = []
        let texts = [payload.title, payload.body] + payload.tags + payload.attachments.map(\.name)
        for text in texts {
            for word in words(text) where seen.insert(word).inserted { out.append(word) }
        }
        return out
    }

    static func token(_ word: String, keys: EpochKeys) -> [UInt8] {
        GenericHash.mac(Array("starline-memory/v1 token\u{0}".utf8) + Array(word.utf8), key: keys.indexKey, length: tokenBytes)
    }

    static func tokens(of payload: NotePayload, keys: EpochKeys) -> Set<[UInt8]> {
        Set(words(of: payload).map { token($0, keys: keys) })
    }
}
