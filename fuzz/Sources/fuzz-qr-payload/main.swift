import FuzzSupport
import StarlineCore
import StarlineQR

// The payload classifier (W6) on any decoded QR symbol, with secrets shown and hidden.
let chatBase = try! BaseURL(validating: "https://chat.example.test")
let hidden = PayloadClassifier(chatBase: chatBase)
let shown = PayloadClassifier(chatBase: chatBase, showSecrets: true)

Fuzz.run { bytes in
    for classifier in [hidden, shown] {
        let result = classifier.classify(bytes)
        _ = JSON.object(result.fields).serialized()
    }
}
