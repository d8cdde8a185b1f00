import FuzzSupport
import StarlineCore
@testable import StarlineKeyring

// The D-Bus wire reader of the Secret Service client: one whole message from the bus, any bytes.
Fuzz.run { bytes in
    _ = try? DBusMessage.decode(bytes)
}
