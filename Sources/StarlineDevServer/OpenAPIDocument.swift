// Generated from docs/openapi.yaml by scripts/embed-openapi (make generated); do not edit.
enum OpenAPIDocument {
    static let text = #"""
        openapi: 3.1.0
        info:
          title: Starline platform and chat HTTP contract
          version: 1.0.0
          description: |
            The normative HTTP contract between the Starline command-line tools and the
            Starline platform (account API + OAuth) and chat service, as served by the
            local development server `sl-devserver` (which also serves this document at
            `GET /openapi.yaml`). A test checks that the routes `sl-devserver` serves and
            the (method, path) pairs below are the same set.

            **Bases.** Platform routes live at the API origin. Chat routes are written
            here with their `/chat` mount prefix, as `sl-devserver` serves them on the
            same port (chat base URL = `http://127.0.0.1:PORT/chat`); against a real
            deployment the chat base is e.g. `https://chat.thestarline.cn` and the
            `/chat` prefix is replaced by that base.

            **Dev-only routes.** Everything under `/__dev/*` exists only on
            `sl-devserver` (never in production) and requires the `X-Dev-Token` header
            printed on the server's first stdout line
            (`{"listening":"http://127.0.0.1:PORT","devToken":"…"}`).

            **Authentication.** `Authorization: Bearer TOKEN` on every route except the
            authorization-server metadata, `/openapi.yaml`, `/oauth/*`, the two SMS
            password-reset routes and friend-link URLs (`/chat/f/{code}`). Unknown or
            malformed token → 401 `INVALID_TOKEN`; revoked session → 401
            `SESSION_REVOKED`; expired session → 401 `SESSION_EXPIRED`; restricted user →
            403 `ACCOUNT_RESTRICTED`; disabled app → 403 `APP_UNAVAILABLE`.

            **Bodies.** JSON, camelCase keys, times RFC 3339 UTC, everywhere except
            `/oauth/*`, which uses RFC field names (snake_case) and
            `application/x-www-form-urlencoded` request bodies. Servers ignore unknown
            request fields and may add response fields (`additionalProperties: true`).
            Request bodies over 64 KiB → 413 `PAYLOAD_TOO_LARGE`.

            **Errors** come in exactly two shapes:
            - `/oauth/*` (RFC 6749 / 7009 / 8628): `{"error":"invalid_grant","error_description":"…"}`
              (schema `OAuthError`).
            - every other route, and the transport-level errors of all routes (404 unknown
              route, 405, 413, 429): `{"error":{"code":"…","message":"…"}}` (schema `Error`);
              scripts match on `error.code`.

            On any route: unknown route → 404 `NOT_FOUND`; a known path with a method
            not listed here → 405 `METHOD_NOT_ALLOWED` with an `Allow` header (not repeated
            per operation, since a documented method never gets it); malformed JSON body →
            400 `INVALID_JSON`; missing/invalid fields or query parameters → 400
            `INVALID_REQUEST`; when a rate limit is set (`POST /__dev/rate-limit`) → 429
            `RATE_LIMITED` with `Retry-After`, and every answer of a route under the limit
            carries `RateLimit-Limit`, `RateLimit-Remaining` (in this one-second window),
            `RateLimit-Reset` (seconds until it ends) and `RateLimit-Policy` (`R;w=1`), as
            real APIs announce their limits. 503 and other undocumented statuses occur
            only through injected faults (`POST /__dev/faults`).

            **Hosts.** `sl-devserver` answers only requests whose `Host` is
            `127.0.0.1`, `localhost` or `[::1]` with the bound port (a web page whose
            name was rebound to 127.0.0.1 — DNS rebinding — sends its own name); any
            other or a missing `Host` → 421 `MISDIRECTED_REQUEST` on every route (not
            repeated per operation: a client using the server's address never gets it).

            **Guessing limits** (as on the real platform):
            - Passwords: after 5 wrong passwords for one user within 300 seconds — in
              the sign-in forms (`POST /oauth/authorize`, `POST /oauth/device`) and as
              `oldPassword` of `POST /api/password`, counted together — every password
              attempt for that user, right or wrong, gets 429 with `Retry-After` (the
              seconds until the oldest of those failures is 300 seconds old): the HTML
              form again on the form routes, `TOO_MANY_ATTEMPTS` on `/api/password`. A
              right password before that clears the count. Unknown user names are not
              counted.
            - SMS codes: a code dies after 5 wrong attempts — the fifth and every later
              attempt, even with the right code, get 400 `CODE_BURNED` until a new code
              is requested. At most 5 codes are sent per phone number per 3600 seconds
              (unknown numbers alike); the sixth request → 429 `TOO_MANY_ATTEMPTS` with
              `Retry-After`.

            **Connections.** Each connection holds a server thread: at most 512 at once
            (`--max-connections`), 128 per client address (`--max-connections-per-ip`);
            more are closed unanswered. A connection idle for 30 seconds
            (`--connection-timeout`), e.g. a half-sent request, is closed. A request
            must arrive whole (headers and body) within 10 seconds of its first byte,
            and at most half of the connections of one address may be in the middle
            of sending a request for more than a second: past either, the slowest
            connections are closed, so a client that trickles bytes cannot hold the
            room other clients on the same machine need. The path is routed as sent:
            `%2F` is not a separator and `%00` does not end it; path parameters and
            query values are decoded after routing.

            **Friend links.** A friend-link URL is `{chat base}/f/{code}` — the configured
            chat base exactly (scheme, host, port, path prefix), e.g.
            `http://127.0.0.1:PORT/chat/f/{code}` against `sl-devserver` or
            `https://chat.thestarline.cn/f/{code}` by default — with `code` matching
            `[A-Za-z0-9_-]{8,64}`. Anything else is not a friend link.
        servers:
          - url: http://127.0.0.1:8080
            description: sl-devserver (the port is chosen with --port; 0 picks a free one)
        tags:
          - name: platform
            description: Authorization-server metadata and this document.
          - name: oauth
            description: OAuth 2.0 authorization code + PKCE (RFC 6749/7636, RFC 8252 loopback redirects), device grant (RFC 8628), revocation (RFC 7009).
          - name: account
            description: Account API (sessions, password).
          - name: admin
            description: Administration (role `admin`).
          - name: chat
            description: Chat service, mounted under `/chat`; sessions of app `workbench` only.
          - name: dev
            description: sl-devserver control routes (dev only, `X-Dev-Token`).
        paths:
          /.well-known/oauth-authorization-server:
            get:
              tags: [platform]
              operationId: getAuthorizationServerMetadata
              summary: RFC 8414 authorization-server metadata
              security: []
              responses:
                '200':
                  description: Metadata.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Metadata'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /openapi.yaml:
            get:
              tags: [platform]
              operationId: getOpenAPI
              summary: This contract
              security: []
              responses:
                '200':
                  description: The OpenAPI document (this file), as `application/yaml` (RFC 9512).
                  content:
                    application/yaml:
                      schema:
                        type: string
                '429':
                  $ref: '#/components/responses/RateLimited'
          /oauth/authorize:
            get:
              tags: [oauth]
              operationId: getAuthorize
              summary: Authorization endpoint (sign-in page)
              description: |
                Serves one HTML sign-in page: inputs `username` and `password`, a hidden
                `csrf` field and the request fields as hidden inputs, and buttons
                `name="action"` `value="approve"` / `value="deny"`, posting to
                `POST /oauth/authorize`. Allowed `redirect_uri`s per app: loopback
                `http://127.0.0.1:{any port}/callback` and `http://[::1]:{any port}/callback`
                (RFC 8252) and the app's custom scheme `starline-{appId}://auth/callback`.
                A bad `client_id` or an unregistered `redirect_uri` is answered with 400 and
                never redirected. With `sl-devserver --auto-approve USER` the request is
                approved at once and answered with the 302 carrying `code`.
              security: []
              parameters:
                - name: response_type
                  in: query
                  required: true
                  schema:
                    type: string
                    enum: [code]
                - name: client_id
                  in: query
                  required: true
                  description: The App ID (e.g. `workbench`).
                  schema:
                    type: string
                    minLength: 1
                - name: redirect_uri
                  in: query
                  required: true
                  schema:
                    type: string
                    minLength: 1
                - name: state
                  in: query
                  required: false
                  description: Opaque; echoed in the redirect.
                  schema:
                    type: string
                - name: code_challenge
                  in: query
                  required: true
                  description: PKCE S256 challenge; without it the request is refused (302 with `error=invalid_request`, no code).
                  schema:
                    type: string
                    minLength: 1
                - name: code_challenge_method
                  in: query
                  required: true
                  schema:
                    type: string
                    enum: [S256]
              responses:
                '200':
                  description: HTML sign-in form.
                  content:
                    text/html:
                      schema:
                        type: string
                '302':
                  description: |
                    Valid `client_id` and `redirect_uri` but otherwise bad request (e.g. missing
                    PKCE): `Location: {redirect_uri}?error=invalid_request&state=…`. With
                    `--auto-approve`: `Location: {redirect_uri}?code=…&state=…`.
                  headers:
                    Location:
                      $ref: '#/components/headers/Location'
                '400':
                  $ref: '#/components/responses/OAuthPageBadRequest'
                '429':
                  $ref: '#/components/responses/RateLimited'
            post:
              tags: [oauth]
              operationId: postAuthorize
              summary: Submit the sign-in form (approve or deny)
              security: []
              requestBody:
                required: true
                content:
                  application/x-www-form-urlencoded:
                    schema:
                      $ref: '#/components/schemas/AuthorizeForm'
              responses:
                '302':
                  description: |
                    `action=approve` with the right password: `Location: {redirect_uri}?code=…&state=…`
                    (single-use code). `action=deny`: `Location: {redirect_uri}?error=access_denied&state=…`.
                  headers:
                    Location:
                      $ref: '#/components/headers/Location'
                '400':
                  $ref: '#/components/responses/OAuthPageBadRequest'
                '401':
                  description: Wrong username or password — the sign-in form again, with a message.
                  content:
                    text/html:
                      schema:
                        type: string
                '413':
                  $ref: '#/components/responses/PayloadTooLarge'
                '429':
                  $ref: '#/components/responses/SignInThrottled'
          /oauth/token:
            post:
              tags: [oauth]
              operationId: postToken
              summary: Token endpoint (authorization_code + PKCE, device_code)
              description: |
                A code is single-use: a second exchange gets 400 `invalid_grant` and revokes
                the tokens issued from that code (RFC 6749 §4.1.2); a wrong `code_verifier`
                gets `invalid_grant`. Device-code polling errors follow RFC 8628
                (`authorization_pending`, `slow_down`, `access_denied`, `expired_token`).
              security: []
              requestBody:
                required: true
                content:
                  application/x-www-form-urlencoded:
                    schema:
                      $ref: '#/components/schemas/TokenRequest'
              responses:
                '200':
                  description: Session created.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/TokenResponse'
                '400':
                  $ref: '#/components/responses/OAuthBadRequest'
                '413':
                  $ref: '#/components/responses/PayloadTooLarge'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /oauth/device_authorization:
            post:
              tags: [oauth]
              operationId: postDeviceAuthorization
              summary: RFC 8628 device authorization request
              security: []
              requestBody:
                required: true
                content:
                  application/x-www-form-urlencoded:
                    schema:
                      $ref: '#/components/schemas/DeviceAuthorizationRequest'
              responses:
                '200':
                  description: Device and user codes.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/DeviceAuthorization'
                '400':
                  $ref: '#/components/responses/OAuthBadRequest'
                '401':
                  description: Unknown `client_id` (`invalid_client`, RFC 6749 §5.2).
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/OAuthError'
                '413':
                  $ref: '#/components/responses/PayloadTooLarge'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /oauth/device:
            get:
              tags: [oauth]
              operationId: getDevice
              summary: Device verification page
              description: HTML form with inputs `username`, `password`, `user_code` (prefilled from the query) and buttons `name="action"` `approve` / `deny`, posting to `POST /oauth/device`.
              security: []
              parameters:
                - name: user_code
                  in: query
                  required: false
                  schema:
                    type: string
              responses:
                '200':
                  description: HTML verification form.
                  content:
                    text/html:
                      schema:
                        type: string
                '429':
                  $ref: '#/components/responses/RateLimited'
            post:
              tags: [oauth]
              operationId: postDevice
              summary: Submit the device verification form
              security: []
              requestBody:
                required: true
                content:
                  application/x-www-form-urlencoded:
                    schema:
                      $ref: '#/components/schemas/DeviceForm'
              responses:
                '200':
                  description: HTML result page.
                  content:
                    text/html:
                      schema:
                        type: string
                '400':
                  description: The code is unknown, expired or already used, or no action was chosen; the HTML form again with a message.
                  content:
                    text/html:
                      schema:
                        type: string
                '401':
                  description: Wrong user name or password; the HTML form again with a message.
                  content:
                    text/html:
                      schema:
                        type: string
                '413':
                  $ref: '#/components/responses/PayloadTooLarge'
                '429':
                  $ref: '#/components/responses/SignInThrottled'
          /oauth/revoke:
            post:
              tags: [oauth]
              operationId: postRevoke
              summary: RFC 7009 token revocation
              security: []
              requestBody:
                required: true
                content:
                  application/x-www-form-urlencoded:
                    schema:
                      $ref: '#/components/schemas/RevokeRequest'
              responses:
                '200':
                  description: Whether or not the token was valid (RFC 7009 §2.2). Empty JSON object.
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                '400':
                  description: No `token` (`invalid_request`, RFC 7009 §2.2.1).
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/OAuthError'
                '413':
                  $ref: '#/components/responses/PayloadTooLarge'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /api/me:
            get:
              tags: [account]
              operationId: getMe
              summary: The caller, its roles and its session
              security:
                - bearer: []
              responses:
                '200':
                  description: Current identity.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/MeResponse'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/Forbidden'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /api/center:
            get:
              tags: [account]
              operationId: getCenter
              summary: Fresh account-center state
              security:
                - bearer: []
              responses:
                '200':
                  description: Profile, security summary, session count.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/CenterResponse'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/Forbidden'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /api/sessions:
            get:
              tags: [account]
              operationId: listSessions
              summary: The caller's active sessions
              security:
                - bearer: []
              responses:
                '200':
                  description: Sessions.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/SessionList'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/Forbidden'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /api/sessions/{id}:
            delete:
              tags: [account]
              operationId: revokeSession
              summary: Revoke one of the caller's sessions
              security:
                - bearer: []
              parameters:
                - $ref: '#/components/parameters/SessionId'
              responses:
                '200':
                  description: Revoked (`revoked:true`), or already revoked (`revoked:false`). `current` tells whether it was the calling session.
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [revoked, current]
                        properties:
                          revoked:
                            type: boolean
                          current:
                            type: boolean
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/Forbidden'
                '404':
                  $ref: '#/components/responses/NotFound'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /api/sessions/revoke-others:
            post:
              tags: [account]
              operationId: revokeOtherSessions
              summary: Revoke every session of the caller except the current one
              security:
                - bearer: []
              responses:
                '200':
                  description: Number of sessions revoked.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/RevokedCount'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/Forbidden'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /api/password:
            post:
              tags: [account]
              operationId: changePassword
              summary: Change the password (revokes the caller's other sessions)
              security:
                - bearer: []
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/PasswordChangeRequest'
              responses:
                '200':
                  description: Changed; number of other sessions revoked.
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [revokedOthers]
                        properties:
                          revokedOthers:
                            type: integer
                            minimum: 0
                '400':
                  $ref: '#/components/responses/PasswordBadRequest'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/PasswordForbidden'
                '413':
                  $ref: '#/components/responses/PayloadTooLarge'
                '429':
                  $ref: '#/components/responses/TooManyAttempts'
          /api/password/sms-reset/request:
            post:
              tags: [account]
              operationId: requestSmsReset
              summary: Send a password-reset SMS code
              description: Answered 202 for unknown phones too (no account enumeration). On sl-devserver the code can be read with `GET /__dev/sms/{phone}`.
              security: []
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/SmsResetRequestBody'
              responses:
                '202':
                  description: Accepted.
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [sent, expiresIn]
                        properties:
                          sent:
                            type: boolean
                            const: true
                          expiresIn:
                            type: integer
                            description: Seconds the code stays valid (300).
                            examples: [300]
                '400':
                  $ref: '#/components/responses/BadRequest'
                '413':
                  $ref: '#/components/responses/PayloadTooLarge'
                '429':
                  $ref: '#/components/responses/TooManyAttempts'
          /api/password/sms-reset:
            post:
              tags: [account]
              operationId: smsReset
              summary: Reset the password with an SMS code (revokes all of the account's sessions)
              security: []
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/SmsResetBody'
              responses:
                '200':
                  description: Password reset; every session of the account revoked.
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [reset, revoked]
                        properties:
                          reset:
                            type: boolean
                            const: true
                          revoked:
                            type: integer
                            minimum: 0
                '400':
                  $ref: '#/components/responses/SmsResetBadRequest'
                '413':
                  $ref: '#/components/responses/PayloadTooLarge'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /api/admin/users:
            get:
              tags: [admin]
              operationId: adminListUsers
              summary: Every user, one page at a time (admin)
              description: |
                Users in id order (byte order). `nextCursor` is opaque: pass it back
                unchanged as `cursor` for the next page; it is null on the last page.
                Pages are keyed by the last id seen, not by an offset, so paging to the
                end lists every user that existed throughout exactly once, even while
                users are added or removed.
              security:
                - bearer: []
              parameters:
                - name: limit
                  in: query
                  required: false
                  description: Page size.
                  schema:
                    type: integer
                    minimum: 1
                    maximum: 1000
                    default: 100
                - name: cursor
                  in: query
                  required: false
                  description: '`nextCursor` of the previous page; omitted for the first page.'
                  schema:
                    type: string
                    minLength: 1
              responses:
                '200':
                  description: One page of users.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/UserPage'
                '400':
                  description: '`INVALID_REQUEST` — `limit` is not an integer in 1..1000, or `cursor` is not one this list handed out.'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/ForbiddenAdmin'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /api/admin/users/{uid}/sessions:
            get:
              tags: [admin]
              operationId: adminListSessions
              summary: A user's sessions (admin)
              security:
                - bearer: []
              parameters:
                - $ref: '#/components/parameters/UserId'
              responses:
                '200':
                  description: The user and their sessions.
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [user, sessions]
                        properties:
                          user:
                            $ref: '#/components/schemas/User'
                          sessions:
                            type: array
                            items:
                              $ref: '#/components/schemas/Session'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/ForbiddenAdmin'
                '404':
                  $ref: '#/components/responses/NotFound'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /api/admin/users/{uid}/sessions/{id}:
            delete:
              tags: [admin]
              operationId: adminRevokeSession
              summary: Revoke one session of a user (admin)
              security:
                - bearer: []
              parameters:
                - $ref: '#/components/parameters/UserId'
                - $ref: '#/components/parameters/SessionId'
              responses:
                '200':
                  description: '`revoked:false` when it was already revoked.'
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [revoked]
                        properties:
                          revoked:
                            type: boolean
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/ForbiddenAdmin'
                '404':
                  $ref: '#/components/responses/NotFound'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /api/admin/users/{uid}/sessions/revoke-all:
            post:
              tags: [admin]
              operationId: adminRevokeAllSessions
              summary: Revoke every session of a user (admin)
              security:
                - bearer: []
              parameters:
                - $ref: '#/components/parameters/UserId'
              responses:
                '200':
                  description: Number of sessions revoked.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/RevokedCount'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/ForbiddenAdmin'
                '404':
                  $ref: '#/components/responses/NotFound'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /chat/v1/conversations:
            get:
              tags: [chat]
              operationId: listConversations
              summary: The caller's conversations
              security:
                - bearer: []
              responses:
                '200':
                  description: Conversations.
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [conversations]
                        properties:
                          conversations:
                            type: array
                            items:
                              $ref: '#/components/schemas/Conversation'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/ForbiddenChat'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /chat/v1/conversations/{id}/messages:
            get:
              tags: [chat]
              operationId: listMessages
              summary: Messages of a conversation, ascending `seq`
              description: |
                A page of messages, or with `clientId` the caller's own message sent with
                that `clientId` (0 or 1 items): how a client settles a send whose answer
                it never got (found → it was stored; empty → send it again with the same
                `clientId`). `clientId` cannot be combined with `before` or `after` (400).
                Reading marks nothing read: only `POST /chat/v1/conversations/{id}/read`
                moves the read mark that `unread` counts from.
              security:
                - bearer: []
              parameters:
                - $ref: '#/components/parameters/ConversationId'
                - name: clientId
                  in: query
                  required: false
                  description: The caller's own message with this `clientId` (as in `PUT …/messages/{clientId}`); not with `before`/`after`.
                  schema:
                    type: string
                    pattern: '^[A-Za-z0-9._-]{1,128}$'
                - name: before
                  in: query
                  required: false
                  description: Only messages with `seq` < this.
                  schema:
                    type: integer
                    minimum: 0
                - name: after
                  in: query
                  required: false
                  description: Only messages with `seq` > this.
                  schema:
                    type: integer
                    minimum: 0
                - $ref: '#/components/parameters/Limit'
              responses:
                '200':
                  description: Messages in ascending `seq` (with `clientId`, at most one).
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [messages]
                        properties:
                          messages:
                            type: array
                            items:
                              $ref: '#/components/schemas/Message'
                '400':
                  $ref: '#/components/responses/BadQuery'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/ForbiddenChat'
                '404':
                  $ref: '#/components/responses/NotFound'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /chat/v1/conversations/{id}/messages/{clientId}:
            put:
              tags: [chat]
              operationId: putMessage
              summary: Send a message, idempotent on `clientId`
              security:
                - bearer: []
              parameters:
                - $ref: '#/components/parameters/ConversationId'
                - $ref: '#/components/parameters/ClientId'
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/TextBody'
              responses:
                '200':
                  description: The same `clientId` with the same body again — the message stored the first time.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Message'
                '201':
                  description: New message.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Message'
                '400':
                  $ref: '#/components/responses/BadRequest'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/ForbiddenChat'
                '404':
                  $ref: '#/components/responses/NotFound'
                '409':
                  $ref: '#/components/responses/ClientIdConflict'
                '413':
                  $ref: '#/components/responses/PayloadTooLarge'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /chat/v1/conversations/{id}/read:
            post:
              tags: [chat]
              operationId: markRead
              summary: Move the caller's read mark up to a message
              description: |
                Sets the caller's read mark of the conversation to the `seq` of message
                `upTo` if that is later than the mark; an earlier or equal one leaves it
                (the mark only moves forward, so a late request from another device
                cannot undo a newer read). `unread` here and in `GET
                /chat/v1/conversations` counts the other members' messages after the
                mark. When the mark moved, a `read` event (schema `ReadMark`) is
                published to the caller only — the caller's other devices learn of it
                through `GET /chat/v1/sync`; other members get nothing.
              security:
                - bearer: []
              parameters:
                - $ref: '#/components/parameters/ConversationId'
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/ReadRequest'
              responses:
                '200':
                  description: The read mark after the request.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/ReadMark'
                '400':
                  description: '`INVALID_JSON`, or `INVALID_REQUEST` (`upTo` missing, or not the id of a message in this conversation).'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/ForbiddenChat'
                '404':
                  $ref: '#/components/responses/NotFound'
                '413':
                  $ref: '#/components/responses/PayloadTooLarge'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /chat/v1/sync:
            get:
              tags: [chat]
              operationId: sync
              summary: Long-poll for events after a cursor
              description: |
                The caller's events after `since`, oldest first, at most `limit`. Without
                `since`: from the oldest event the server still keeps. A page of fewer
                than `limit` events is everything up to now, and its `cursor` may lie
                past events of other users (so a quiet client's cursor does not go
                stale); a full page may have more behind it — call again with its
                `cursor` (with `timeout=0` to page without waiting). Each event carries
                its payload under the key named by its `type` (schema `Event`); clients
                ignore types they do not know. A cursor older than the events kept
                (`sl-devserver --event-retention N`) → 410 `CURSOR_EXPIRED`, also when
                the events were dropped while the request waited, and for a cursor
                beyond every event the server has issued (it was reset, or restarted
                without `--db`).
              security:
                - bearer: []
              parameters:
                - name: since
                  in: query
                  required: false
                  description: Opaque cursor from a previous response; omitted on the first call.
                  schema:
                    type: string
                    minLength: 1
                - name: limit
                  in: query
                  required: false
                  description: Most events in one answer.
                  schema:
                    type: integer
                    minimum: 1
                    maximum: 1000
                    default: 100
                - name: timeout
                  in: query
                  required: false
                  description: Seconds to wait for an event before answering with empty `events`.
                  schema:
                    type: integer
                    minimum: 0
                    maximum: 30
              responses:
                '200':
                  description: Events after `since` (empty after the timeout) and the cursor to pass next.
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [events, cursor]
                        properties:
                          events:
                            type: array
                            items:
                              $ref: '#/components/schemas/Event'
                          cursor:
                            type: string
                            description: Pass as `since` next time.
                '400':
                  $ref: '#/components/responses/SyncBadRequest'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/ForbiddenChat'
                '410':
                  description: '`CURSOR_EXPIRED` — events after `since` were dropped (`sl-devserver --event-retention N` keeps the newest N, default 100000), or `since` is beyond every event this server issued (a reset, a restart without `--db`); the client reports a gap, reads the history again and syncs without `since`.'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /chat/v1/friends:
            get:
              tags: [chat]
              operationId: listFriends
              summary: The caller's friends
              security:
                - bearer: []
              responses:
                '200':
                  description: Friends.
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [friends]
                        properties:
                          friends:
                            type: array
                            items:
                              $ref: '#/components/schemas/Friend'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/ForbiddenChat'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /chat/v1/friend-links:
            post:
              tags: [chat]
              operationId: createFriendLink
              summary: Create a friend link `{chat base}/f/{code}`
              security:
                - bearer: []
              requestBody:
                required: false
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/FriendLinkRequest'
              responses:
                '201':
                  description: Link created.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/FriendLink'
                '400':
                  $ref: '#/components/responses/BadRequest'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/ForbiddenChat'
                '413':
                  $ref: '#/components/responses/PayloadTooLarge'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /chat/v1/friend-links/{code}/redeem:
            post:
              tags: [chat]
              operationId: redeemFriendLink
              summary: Redeem a friend link (single use)
              security:
                - bearer: []
              parameters:
                - $ref: '#/components/parameters/LinkCode'
              responses:
                '200':
                  description: |
                    Now friends; the direct conversation with the inviter. When the caller and the inviter are friends
                    already, the same answer with `alreadyFriends: true` and nothing changes: the link is not used up (a
                    retry whose answer was lost, a second scan, are safe).
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [friend, conversationId, alreadyFriends]
                        properties:
                          friend:
                            $ref: '#/components/schemas/Friend'
                          conversationId:
                            type: string
                          alreadyFriends:
                            type: boolean
                '400':
                  $ref: '#/components/responses/OwnLink'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/ForbiddenChat'
                '404':
                  $ref: '#/components/responses/NotFound'
                '410':
                  $ref: '#/components/responses/LinkGone'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /chat/f/{code}:
            get:
              tags: [chat]
              operationId: getFriendLink
              summary: Friend-link URL (unauthenticated preview)
              security: []
              parameters:
                - $ref: '#/components/parameters/LinkCode'
              responses:
                '200':
                  description: Who invites, until when, and whether the link was already redeemed.
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [code, inviter, expiresAt, redeemed]
                        properties:
                          code:
                            type: string
                          inviter:
                            $ref: '#/components/schemas/User'
                          expiresAt:
                            type: string
                            format: date-time
                          redeemed:
                            type: boolean
                '404':
                  $ref: '#/components/responses/NotFound'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /chat/v1/moments:
            get:
              tags: [chat]
              operationId: listMoments
              summary: Moments, newest first
              security:
                - bearer: []
              parameters:
                - name: before
                  in: query
                  required: false
                  description: A moment `id`; only moments older than it.
                  schema:
                    type: string
                    minLength: 1
                - $ref: '#/components/parameters/Limit'
              responses:
                '200':
                  description: Moments, newest first.
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [moments]
                        properties:
                          moments:
                            type: array
                            items:
                              $ref: '#/components/schemas/Moment'
                '400':
                  $ref: '#/components/responses/BadQuery'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/ForbiddenChat'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /chat/v1/moments/{clientId}:
            put:
              tags: [chat]
              operationId: putMoment
              summary: Post a moment, idempotent on `clientId`
              security:
                - bearer: []
              parameters:
                - $ref: '#/components/parameters/ClientId'
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/TextBody'
              responses:
                '200':
                  description: The same `clientId` with the same body again — the moment stored the first time.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Moment'
                '201':
                  description: New moment.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Moment'
                '400':
                  $ref: '#/components/responses/BadRequest'
                '401':
                  $ref: '#/components/responses/Unauthorized'
                '403':
                  $ref: '#/components/responses/ForbiddenChat'
                '409':
                  $ref: '#/components/responses/ClientIdConflict'
                '413':
                  $ref: '#/components/responses/PayloadTooLarge'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /__dev/faults:
            post:
              tags: [dev]
              operationId: devAddFault
              summary: Inject a fault on a route (dev only)
              description: |
                `route` is `METHOD /path` as the server sees it (chat routes include the
                `/chat` mount), with `*` standing for one path segment, e.g.
                `PUT /chat/v1/conversations/*/messages/*`. A `status` or `reset` fault
                answers without running the handler; a `delayMs` fault runs the handler
                first and delays the response; a `hold` fault holds the request before
                its handler runs until the faults are cleared (`DELETE /__dev/faults` or
                `POST /__dev/reset`) or the server stops (ten minutes at most), then
                runs it, so a test decides when the request goes on. A `status` fault may carry response
                `headers`, e.g. `{"route":"DELETE /api/admin/users/*/sessions/*",
                "status":429,"headers":{"Retry-After":"3"},"count":5}`: at most 16, names
                of 1-64 token characters (RFC 9110 §5.6.2) and not one the server writes
                itself (`Content-Length`, `Content-Type`, `Transfer-Encoding`,
                `Connection`, `Keep-Alive`, `Upgrade`, `Trailer`, `TE`), each name once
                (case-insensitively), string values of at most 1024 bytes of printable
                ASCII, spaces and tabs (no CR or LF). Anything else → 400 `INVALID_REQUEST`.
              security:
                - devToken: []
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/FaultRequest'
              responses:
                '201':
                  description: Fault installed.
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [fault]
                        properties:
                          fault:
                            $ref: '#/components/schemas/Fault'
                '400':
                  $ref: '#/components/responses/BadRequest'
                '401':
                  $ref: '#/components/responses/DevUnauthorized'
                '409':
                  description: '`TOO_MANY_FAULTS` — 1000 faults are installed; `DELETE /__dev/faults` clears them.'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '413':
                  $ref: '#/components/responses/PayloadTooLarge'
                '429':
                  $ref: '#/components/responses/RateLimited'
            delete:
              tags: [dev]
              operationId: devClearFaults
              summary: Remove every injected fault (dev only)
              security:
                - devToken: []
              responses:
                '200':
                  description: Number of faults removed.
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [cleared]
                        properties:
                          cleared:
                            type: integer
                            minimum: 0
                '401':
                  $ref: '#/components/responses/DevUnauthorized'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /__dev/users/{uid}/restrict:
            post:
              tags: [dev]
              operationId: devRestrictUser
              summary: Restrict a user (dev only)
              description: While set, the user's authenticated requests get 403 `ACCOUNT_RESTRICTED`; sessions stay valid and work again after `unrestrict`.
              security:
                - devToken: []
              parameters:
                - $ref: '#/components/parameters/UserId'
              responses:
                '200':
                  description: Flag set.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/RestrictResult'
                '401':
                  $ref: '#/components/responses/DevUnauthorized'
                '404':
                  $ref: '#/components/responses/NotFound'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /__dev/users/{uid}/unrestrict:
            post:
              tags: [dev]
              operationId: devUnrestrictUser
              summary: Lift a user's restriction (dev only)
              security:
                - devToken: []
              parameters:
                - $ref: '#/components/parameters/UserId'
              responses:
                '200':
                  description: Flag cleared.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/RestrictResult'
                '401':
                  $ref: '#/components/responses/DevUnauthorized'
                '404':
                  $ref: '#/components/responses/NotFound'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /__dev/apps/{appId}/disable:
            post:
              tags: [dev]
              operationId: devDisableApp
              summary: Disable an app (dev only)
              description: While set, the app's authenticated requests get 403 `APP_UNAVAILABLE`; sessions stay valid and work again after `enable`.
              security:
                - devToken: []
              parameters:
                - $ref: '#/components/parameters/AppId'
              responses:
                '200':
                  description: Flag set.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/AppFlagResult'
                '401':
                  $ref: '#/components/responses/DevUnauthorized'
                '404':
                  $ref: '#/components/responses/NotFound'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /__dev/apps/{appId}/enable:
            post:
              tags: [dev]
              operationId: devEnableApp
              summary: Re-enable an app (dev only)
              security:
                - devToken: []
              parameters:
                - $ref: '#/components/parameters/AppId'
              responses:
                '200':
                  description: Flag cleared.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/AppFlagResult'
                '401':
                  $ref: '#/components/responses/DevUnauthorized'
                '404':
                  $ref: '#/components/responses/NotFound'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /__dev/sessions/{id}/expire:
            post:
              tags: [dev]
              operationId: devExpireSession
              summary: Expire a session now (dev only)
              description: Its next request gets 401 `SESSION_EXPIRED`.
              security:
                - devToken: []
              parameters:
                - $ref: '#/components/parameters/SessionId'
              responses:
                '200':
                  description: Session expired.
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [session, expired]
                        properties:
                          session:
                            type: string
                            description: The session id.
                          expired:
                            type: boolean
                            const: true
                '401':
                  $ref: '#/components/responses/DevUnauthorized'
                '404':
                  $ref: '#/components/responses/NotFound'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /__dev/users:
            post:
              tags: [dev]
              operationId: devCreateUsers
              summary: Create N users, each with M sessions (dev only; bulk tests, benchmarks)
              description: |
                User ids are `prefix` followed by 1..`count`, zero-padded to at least 4
                digits (5 for a count of 10000): `{"count":3,"prefix":"u"}` creates `u0001`,
                `u0002`, `u0003`, so ids sort in creation order. Each user's name and
                display name are the id, roles none, password `password` or else
                `{id}-pass` (as the seeded users). Each gets `sessionsPerUser` sessions of
                app `appId` (default `workbench`); the answer carries their tokens. Done in
                one transaction: on any error nothing is created. Bounds: `count` ≤ 10000,
                `sessionsPerUser` ≤ 100, `count` × `sessionsPerUser` ≤ 100000.
              security:
                - devToken: []
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/DevUsersRequest'
              responses:
                '201':
                  description: The users and sessions created.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/DevUsersResult'
                '400':
                  $ref: '#/components/responses/BadRequest'
                '401':
                  $ref: '#/components/responses/DevUnauthorized'
                '404':
                  $ref: '#/components/responses/NotFound'
                '409':
                  description: '`USER_EXISTS` — one of the ids exists already (nothing was created); use another prefix or `POST /__dev/reset`.'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '413':
                  $ref: '#/components/responses/PayloadTooLarge'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /__dev/users/{uid}/sessions:
            post:
              tags: [dev]
              operationId: devCreateSessions
              summary: Create N device sessions for a user (dev only; bulk tests, benchmarks)
              security:
                - devToken: []
              parameters:
                - $ref: '#/components/parameters/UserId'
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/DevSessionsRequest'
              responses:
                '201':
                  description: The ids of the sessions created.
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [ids]
                        properties:
                          ids:
                            type: array
                            items:
                              type: string
                '400':
                  $ref: '#/components/responses/BadRequest'
                '401':
                  $ref: '#/components/responses/DevUnauthorized'
                '404':
                  $ref: '#/components/responses/NotFound'
                '413':
                  $ref: '#/components/responses/PayloadTooLarge'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /__dev/conversations/{id}/messages:
            post:
              tags: [dev]
              operationId: devCreateMessages
              summary: Create N messages from one member (dev only; bulk tests, benchmarks)
              description: |
                Creates `count` messages from `sender` (a member) with texts
                "`text` 1" … "`text` N" (`text` defaults to `message`), distinct
                `clientId`s, consecutive `seq`s, and for each the `message` event to
                every member that `PUT …/messages/{clientId}` would publish, so `GET
                /chat/v1/sync` pages through them; only the newest `--event-retention`
                events are kept, as with PUTs. One transaction: on any error nothing is
                created. Long polls are woken once, at the end.
              security:
                - devToken: []
              parameters:
                - $ref: '#/components/parameters/ConversationId'
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/DevMessagesRequest'
              responses:
                '201':
                  description: How many were created and the `seq` range they got.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/DevMessagesResult'
                '400':
                  description: '`INVALID_JSON`, or `INVALID_REQUEST` (`count` out of 1..1000000, `sender` missing or not a member, `text` empty or too long).'
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Error'
                '401':
                  $ref: '#/components/responses/DevUnauthorized'
                '404':
                  $ref: '#/components/responses/NotFound'
                '413':
                  $ref: '#/components/responses/PayloadTooLarge'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /__dev/sms/{phone}:
            get:
              tags: [dev]
              operationId: devGetSmsCode
              summary: The last SMS code sent to a phone (dev only)
              security:
                - devToken: []
              parameters:
                - name: phone
                  in: path
                  required: true
                  description: E.164 phone number, e.g. `+8613800000001` (`+` may be sent literally or as `%2B`).
                  schema:
                    type: string
              responses:
                '200':
                  description: The code.
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [code]
                        properties:
                          code:
                            type: string
                '401':
                  $ref: '#/components/responses/DevUnauthorized'
                '404':
                  $ref: '#/components/responses/NotFound'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /__dev/rate-limit:
            post:
              tags: [dev]
              operationId: devSetRateLimit
              summary: Set the request rate limit (dev only; 0 turns it off, off by default)
              security:
                - devToken: []
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      $ref: '#/components/schemas/RateLimit'
              responses:
                '200':
                  description: The limit now in force.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/RateLimit'
                '400':
                  $ref: '#/components/responses/BadRequest'
                '401':
                  $ref: '#/components/responses/DevUnauthorized'
                '413':
                  $ref: '#/components/responses/PayloadTooLarge'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /__dev/counters:
            get:
              tags: [dev]
              operationId: devGetCounters
              summary: Request counters (dev only)
              description: Every request received (faulted ones too), keyed by `METHOD` and route template, e.g. `DELETE /api/sessions/{id}`.
              security:
                - devToken: []
              responses:
                '200':
                  description: Counters.
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [counters]
                        properties:
                          counters:
                            type: object
                            additionalProperties:
                              type: integer
                              minimum: 0
                            examples:
                              - GET /api/me: 3
                                DELETE /api/sessions/{id}: 1
                '401':
                  $ref: '#/components/responses/DevUnauthorized'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /__dev/revocations:
            get:
              tags: [dev]
              operationId: devGetRevocations
              summary: Revocation requests per session (dev only)
              description: |
                Every session (of `user`, when given) with the number of DELETE requests
                that reached it through `DELETE /api/sessions/{id}` or
                `DELETE /api/admin/users/{uid}/sessions/{id}`: the one that revoked it and
                any later ones that found it revoked already. Requests answered by an
                injected fault, or refused before the session was found (401, 403, 404),
                are not counted here (`GET /__dev/counters` counts every request). A bulk
                revocation that revoked each session exactly once leaves 1 everywhere.
                Counts live with the sessions and are cleared by `POST /__dev/reset`.
              security:
                - devToken: []
              parameters:
                - name: user
                  in: query
                  required: false
                  description: Only this user's sessions.
                  schema:
                    type: string
                    minLength: 1
              responses:
                '200':
                  description: Counts per session id.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/Revocations'
                '401':
                  $ref: '#/components/responses/DevUnauthorized'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /__dev/reset:
            post:
              tags: [dev]
              operationId: devReset
              summary: Restore the seed state (dev only)
              security:
                - devToken: []
              responses:
                '200':
                  description: Reset done.
                  content:
                    application/json:
                      schema:
                        type: object
                        additionalProperties: true
                        required: [reset]
                        properties:
                          reset:
                            type: boolean
                            const: true
                '401':
                  $ref: '#/components/responses/DevUnauthorized'
                '429':
                  $ref: '#/components/responses/RateLimited'
          /__dev/clock:
            get:
              tags: [dev]
              operationId: devGetClock
              summary: The server's time and how far it is moved (dev only)
              security:
                - devToken: []
              responses:
                '200':
                  description: The server's clock.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/DevClock'
                '401':
                  $ref: '#/components/responses/DevUnauthorized'
                '429':
                  $ref: '#/components/responses/RateLimited'
            post:
              tags: [dev]
              operationId: devMoveClock
              summary: Move the server's wall time (dev only)
              description: >-
                Moves the server's wall time by `advanceSeconds` (negative: back), so what has a lifetime — authorization
                codes, device codes, SMS codes, friend links, sessions — expires without waiting it out. Moves add up,
                within ten years (315,360,000 seconds) of the system's time either way; `POST /__dev/reset` undoes them.
                What limits throughput (the rate limit's one-second window, sign-in throttling) keeps real seconds.
              security:
                - devToken: []
              requestBody:
                required: true
                content:
                  application/json:
                    schema:
                      type: object
                      additionalProperties: true
                      required: [advanceSeconds]
                      properties:
                        advanceSeconds:
                          type: integer
                          minimum: -315360000
                          maximum: 315360000
              responses:
                '200':
                  description: The clock after the move.
                  content:
                    application/json:
                      schema:
                        $ref: '#/components/schemas/DevClock'
                '400':
                  $ref: '#/components/responses/BadRequest'
                '401':
                  $ref: '#/components/responses/DevUnauthorized'
                '413':
                  $ref: '#/components/responses/PayloadTooLarge'
                '429':
                  $ref: '#/components/responses/RateLimited'
        components:
          securitySchemes:
            bearer:
              type: http
              scheme: bearer
              description: '`Authorization: Bearer TOKEN` — an access token from `POST /oauth/token`.'
            devToken:
              type: apiKey
              in: header
              name: X-Dev-Token
              description: The `devToken` printed on sl-devserver's first stdout line. Missing or wrong → 401 `INVALID_DEV_TOKEN`.
          headers:
            RetryAfter:
              description: Seconds to wait before retrying.
              required: true
              schema:
                type: integer
                minimum: 0
            Location:
              description: Redirect target.
              required: true
              schema:
                type: string
            Allow:
              description: The methods the path supports.
              required: true
              schema:
                type: string
          parameters:
            SessionId:
              name: id
              in: path
              required: true
              description: Session id.
              schema:
                type: string
            UserId:
              name: uid
              in: path
              required: true
              description: User id.
              schema:
                type: string
            AppId:
              name: appId
              in: path
              required: true
              description: App id (e.g. `workbench`, `com.example.game`).
              schema:
                type: string
            ConversationId:
              name: id
              in: path
              required: true
              description: Conversation id.
              schema:
                type: string
            ClientId:
              name: clientId
              in: path
              required: true
              description: Client-chosen idempotency key (e.g. a UUID); 1–128 of A–Z a–z 0–9 . _ - (else 400).
              schema:
                type: string
                pattern: '^[A-Za-z0-9._-]{1,128}$'
            LinkCode:
              name: code
              in: path
              required: true
              description: Friend-link code.
              schema:
                type: string
                pattern: '^[A-Za-z0-9_-]{8,64}$'
            Limit:
              name: limit
              in: query
              required: false
              description: Page size.
              schema:
                type: integer
                minimum: 1
                maximum: 200
                default: 50
          responses:
            BadRequest:
              description: '`INVALID_JSON` (malformed JSON body) or `INVALID_REQUEST` (missing or invalid fields).'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
                  examples:
                    invalidJson:
                      value:
                        error:
                          code: INVALID_JSON
                          message: request body is not valid JSON
            BadQuery:
              description: '`INVALID_REQUEST` (a query parameter is malformed or out of range).'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            PasswordBadRequest:
              description: '`INVALID_JSON`, `INVALID_REQUEST`, or `WEAK_PASSWORD` (new password shorter than 8 characters).'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            SmsResetBadRequest:
              description: '`INVALID_JSON`, `INVALID_REQUEST`, `INVALID_CODE` (wrong or expired code), `CODE_BURNED` (5 wrong attempts at this code: request a new one), or `WEAK_PASSWORD` (new password shorter than 8 characters).'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            SyncBadRequest:
              description: '`INVALID_CURSOR` (unknown or malformed `since`) or `INVALID_REQUEST` (`timeout` out of 0..30, `limit` out of 1..1000).'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            OwnLink:
              description: '`OWN_LINK` — the caller created this link.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            Unauthorized:
              description: '`INVALID_TOKEN` (missing, unknown or malformed token), `SESSION_REVOKED`, or `SESSION_EXPIRED`.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
                  examples:
                    revoked:
                      value:
                        error:
                          code: SESSION_REVOKED
                          message: this session was revoked
            DevUnauthorized:
              description: '`INVALID_DEV_TOKEN` — `X-Dev-Token` missing or wrong.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            Forbidden:
              description: '`ACCOUNT_RESTRICTED` (the user is restricted) or `APP_UNAVAILABLE` (the session''s app is disabled).'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            PasswordForbidden:
              description: '`WRONG_PASSWORD` (`oldPassword` does not match), `ACCOUNT_RESTRICTED`, or `APP_UNAVAILABLE`.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            ForbiddenAdmin:
              description: '`FORBIDDEN` (the caller lacks role `admin`), `ACCOUNT_RESTRICTED`, or `APP_UNAVAILABLE`.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            ForbiddenChat:
              description: '`FORBIDDEN` (the session''s app is not `workbench`), `ACCOUNT_RESTRICTED`, or `APP_UNAVAILABLE`.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            NotFound:
              description: '`NOT_FOUND` — unknown (or not visible to the caller) object, or unknown route.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            MethodNotAllowed:
              description: '`METHOD_NOT_ALLOWED` — the path exists but not with this method (any route; not listed per operation).'
              headers:
                Allow:
                  $ref: '#/components/headers/Allow'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            ClientIdConflict:
              description: '`CLIENT_ID_CONFLICT` — this `clientId` was already used with a different body.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            LinkGone:
              description: '`LINK_USED` (already redeemed) or `LINK_EXPIRED`.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            PayloadTooLarge:
              description: '`PAYLOAD_TOO_LARGE` — request body over 64 KiB.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            RateLimited:
              description: '`RATE_LIMITED` — a rate limit is set and exceeded (any route).'
              headers:
                Retry-After:
                  $ref: '#/components/headers/RetryAfter'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            TooManyAttempts:
              description: '`TOO_MANY_ATTEMPTS` (too many wrong passwords for this user, or SMS codes for this phone; see Guessing limits) or `RATE_LIMITED`.'
              headers:
                Retry-After:
                  $ref: '#/components/headers/RetryAfter'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            SignInThrottled:
              description: 'Too many wrong passwords for this user (see Guessing limits): the HTML form again with a message; or `RATE_LIMITED` JSON when a rate limit is set.'
              headers:
                Retry-After:
                  $ref: '#/components/headers/RetryAfter'
              content:
                text/html:
                  schema:
                    type: string
                application/json:
                  schema:
                    $ref: '#/components/schemas/Error'
            OAuthBadRequest:
              description: 'RFC error: `invalid_request`, `invalid_client`, `invalid_grant`, `unsupported_grant_type`, or (device grant, RFC 8628) `authorization_pending`, `slow_down`, `access_denied`, `expired_token`.'
              content:
                application/json:
                  schema:
                    $ref: '#/components/schemas/OAuthError'
                  examples:
                    reusedCode:
                      value:
                        error: invalid_grant
                        error_description: authorization code already used
            OAuthPageBadRequest:
              description: 'Unknown `client_id`, unregistered `redirect_uri` (never redirected to), or bad `csrf` — an HTML error page, or `OAuthError` JSON (`invalid_client` / `invalid_request`) when the client accepts JSON.'
              content:
                text/html:
                  schema:
                    type: string
                application/json:
                  schema:
                    $ref: '#/components/schemas/OAuthError'
          schemas:
            Error:
              type: object
              additionalProperties: true
              required: [error]
              description: Error shape of every route outside `/oauth/*` (and of transport-level errors everywhere).
              properties:
                error:
                  type: object
                  additionalProperties: true
                  required: [code, message]
                  properties:
                    code:
                      type: string
                      description: Stable machine-readable code; each response lists the codes it may carry.
                      enum:
                        - INVALID_JSON
                        - INVALID_REQUEST
                        - INVALID_TOKEN
                        - SESSION_REVOKED
                        - SESSION_EXPIRED
                        - ACCOUNT_RESTRICTED
                        - APP_UNAVAILABLE
                        - FORBIDDEN
                        - WRONG_PASSWORD
                        - WEAK_PASSWORD
                        - INVALID_CODE
                        - INVALID_CURSOR
                        - CURSOR_EXPIRED
                        - OWN_LINK
                        - NOT_FOUND
                        - METHOD_NOT_ALLOWED
                        - CLIENT_ID_CONFLICT
                        - LINK_USED
                        - LINK_EXPIRED
                        - PAYLOAD_TOO_LARGE
                        - RATE_LIMITED
                        - INVALID_DEV_TOKEN
                        - MISDIRECTED_REQUEST
                        - TOO_MANY_ATTEMPTS
                        - CODE_BURNED
                        - TOO_MANY_FAULTS
                        - USER_EXISTS
                    message:
                      type: string
                      description: Human-readable; never contains secrets.
            OAuthError:
              type: object
              additionalProperties: true
              required: [error]
              description: RFC 6749 §5.2 / RFC 8628 §3.5 error shape, used by `/oauth/*`.
              properties:
                error:
                  type: string
                  enum:
                    - invalid_request
                    - invalid_client
                    - invalid_grant
                    - unsupported_grant_type
                    - authorization_pending
                    - slow_down
                    - access_denied
                    - expired_token
                error_description:
                  type: string
            User:
              type: object
              additionalProperties: true
              required: [id, name, displayName]
              properties:
                id:
                  type: string
                name:
                  type: string
                  description: Login name (e.g. `alice`).
                displayName:
                  type: string
            Device:
              type: object
              additionalProperties: true
              required: [name, platform]
              properties:
                name:
                  type: string
                platform:
                  type: string
            Session:
              type: object
              additionalProperties: true
              required: [id, appId, device, ip, createdAt, lastSeenAt, expiresAt, current]
              properties:
                id:
                  type: string
                appId:
                  type: string
                device:
                  $ref: '#/components/schemas/Device'
                ip:
                  type: string
                createdAt:
                  type: string
                  format: date-time
                lastSeenAt:
                  type: string
                  format: date-time
                expiresAt:
                  type: string
                  format: date-time
                current:
                  type: boolean
                  description: True for the session making the request.
            SessionList:
              type: object
              additionalProperties: true
              required: [sessions]
              properties:
                sessions:
                  type: array
                  items:
                    $ref: '#/components/schemas/Session'
            SessionSummary:
              type: object
              additionalProperties: true
              required: [id, appId, expiresAt]
              properties:
                id:
                  type: string
                appId:
                  type: string
                expiresAt:
                  type: string
                  format: date-time
            MeResponse:
              type: object
              additionalProperties: true
              required: [user, roles, session]
              properties:
                user:
                  $ref: '#/components/schemas/User'
                roles:
                  $ref: '#/components/schemas/Roles'
                session:
                  $ref: '#/components/schemas/SessionSummary'
            CenterResponse:
              type: object
              additionalProperties: true
              required: [user, roles, security, sessionCount, currentSessionId]
              properties:
                user:
                  $ref: '#/components/schemas/User'
                roles:
                  $ref: '#/components/schemas/Roles'
                security:
                  type: object
                  additionalProperties: true
                  required: [phoneMasked, passwordUpdatedAt]
                  properties:
                    phoneMasked:
                      type: string
                      examples: ['+86138****0001']
                    passwordUpdatedAt:
                      type: [string, 'null']
                      format: date-time
                sessionCount:
                  type: integer
                  minimum: 0
                currentSessionId:
                  type: string
            Roles:
              type: array
              items:
                type: string
              examples:
                - [admin]
            RevokedCount:
              type: object
              additionalProperties: true
              required: [revoked]
              properties:
                revoked:
                  type: integer
                  minimum: 0
            Message:
              type: object
              additionalProperties: true
              required: [id, clientId, conversationId, senderId, text, createdAt, seq]
              properties:
                id:
                  type: string
                clientId:
                  type: string
                conversationId:
                  type: string
                senderId:
                  type: string
                text:
                  type: string
                createdAt:
                  type: string
                  format: date-time
                seq:
                  type: integer
                  minimum: 0
                  description: Position in the conversation, strictly increasing.
            Conversation:
              type: object
              additionalProperties: true
              required: [id, kind, title, members, lastMessage, unread]
              properties:
                id:
                  type: string
                kind:
                  type: string
                  enum: [direct, group]
                title:
                  type: string
                members:
                  type: array
                  description: User ids.
                  items:
                    type: string
                lastMessage:
                  anyOf:
                    - $ref: '#/components/schemas/Message'
                    - type: 'null'
                unread:
                  type: integer
                  minimum: 0
                  description: Other members' messages after the caller's read mark (moved only by `POST /chat/v1/conversations/{id}/read`).
            Friend:
              type: object
              additionalProperties: true
              required: [id, name, displayName, conversationId]
              properties:
                id:
                  type: string
                name:
                  type: string
                displayName:
                  type: string
                conversationId:
                  type: string
                  description: The direct conversation with this friend.
            Moment:
              type: object
              additionalProperties: true
              required: [id, clientId, authorId, text, createdAt]
              properties:
                id:
                  type: string
                clientId:
                  type: string
                authorId:
                  type: string
                text:
                  type: string
                createdAt:
                  type: string
                  format: date-time
            Event:
              type: object
              additionalProperties: true
              required: [seq, type, cursor]
              description: |
                One sync event. Its payload is under the key named by `type`, and is the
                whole object, so a client can upsert it without another request:
                - `message` — a new message (schema `Message`, with `conversationId`
                  and `seq`), to every member of its conversation, the sender too;
                - `friend` — a new friend (schema `Friend`, with the `conversationId`
                  of the direct conversation), to both people of a redeemed link;
                - `moment` — a new moment (schema `Moment`), to its author and the
                  author's friends;
                - `read` — the caller's read mark moved (schema `ReadMark`), to the
                  reader only.
                Clients ignore event types they do not know.
              properties:
                seq:
                  type: integer
                  minimum: 0
                  description: Position in the caller's event stream, strictly increasing (not contiguous per user).
                type:
                  type: string
                  enum: [message, friend, moment, read]
                cursor:
                  type: string
                  description: Cursor just after this event (resume here to get the events after it).
                message:
                  $ref: '#/components/schemas/Message'
                friend:
                  $ref: '#/components/schemas/Friend'
                moment:
                  $ref: '#/components/schemas/Moment'
                read:
                  $ref: '#/components/schemas/ReadMark'
            ReadRequest:
              type: object
              additionalProperties: true
              required: [upTo]
              properties:
                upTo:
                  type: string
                  minLength: 1
                  maxLength: 256
                  description: Id of a message in the conversation; everything up to and including it is read.
            ReadMark:
              type: object
              additionalProperties: true
              required: [conversationId, lastReadSeq, unread]
              properties:
                conversationId:
                  type: string
                lastReadSeq:
                  type: integer
                  minimum: 0
                  description: '`seq` of the last message read (0: none).'
                unread:
                  type: integer
                  minimum: 0
                  description: Other members' messages after `lastReadSeq`.
            FriendLink:
              type: object
              additionalProperties: true
              required: [code, url, expiresAt]
              properties:
                code:
                  type: string
                  pattern: '^[A-Za-z0-9_-]{8,64}$'
                url:
                  type: string
                  description: '`{chat base}/f/{code}`, e.g. `http://127.0.0.1:PORT/chat/f/{code}`.'
                expiresAt:
                  type: string
                  format: date-time
            Metadata:
              type: object
              additionalProperties: true
              description: RFC 8414 authorization-server metadata.
              required:
                - issuer
                - authorization_endpoint
                - token_endpoint
                - device_authorization_endpoint
                - revocation_endpoint
                - response_types_supported
                - grant_types_supported
                - code_challenge_methods_supported
                - token_endpoint_auth_methods_supported
              properties:
                issuer:
                  type: string
                authorization_endpoint:
                  type: string
                token_endpoint:
                  type: string
                device_authorization_endpoint:
                  type: string
                revocation_endpoint:
                  type: string
                response_types_supported:
                  type: array
                  items:
                    type: string
                  examples:
                    - [code]
                grant_types_supported:
                  type: array
                  items:
                    type: string
                  examples:
                    - [authorization_code, 'urn:ietf:params:oauth:grant-type:device_code']
                code_challenge_methods_supported:
                  type: array
                  items:
                    type: string
                  examples:
                    - [S256]
                token_endpoint_auth_methods_supported:
                  type: array
                  items:
                    type: string
                  examples:
                    - [none]
            TokenResponse:
              type: object
              additionalProperties: true
              required: [access_token, token_type, expires_in, session_id, user, roles]
              properties:
                access_token:
                  type: string
                token_type:
                  type: string
                  const: Bearer
                expires_in:
                  type: integer
                  minimum: 0
                  description: Seconds.
                session_id:
                  type: string
                user:
                  $ref: '#/components/schemas/User'
                roles:
                  $ref: '#/components/schemas/Roles'
            DeviceAuthorization:
              type: object
              additionalProperties: true
              required: [device_code, user_code, verification_uri, verification_uri_complete, expires_in, interval]
              properties:
                device_code:
                  type: string
                user_code:
                  type: string
                verification_uri:
                  type: string
                verification_uri_complete:
                  type: string
                expires_in:
                  type: integer
                  minimum: 0
                  description: Seconds.
                interval:
                  type: integer
                  minimum: 0
                  description: Minimum seconds between token polls.
            AuthorizeForm:
              type: object
              additionalProperties: true
              description: The sign-in form's fields; `username` and `password` are needed for `action=approve`.
              required: [csrf, response_type, client_id, redirect_uri, code_challenge, code_challenge_method, action]
              properties:
                csrf:
                  type: string
                  minLength: 1
                response_type:
                  type: string
                  enum: [code]
                client_id:
                  type: string
                  minLength: 1
                redirect_uri:
                  type: string
                  minLength: 1
                state:
                  type: string
                code_challenge:
                  type: string
                  minLength: 1
                code_challenge_method:
                  type: string
                  enum: [S256]
                username:
                  type: string
                password:
                  type: string
                action:
                  type: string
                  enum: [approve, deny]
            TokenRequest:
              oneOf:
                - $ref: '#/components/schemas/TokenRequestAuthorizationCode'
                - $ref: '#/components/schemas/TokenRequestDeviceCode'
            TokenRequestAuthorizationCode:
              type: object
              additionalProperties: true
              required: [grant_type, code, redirect_uri, client_id, code_verifier]
              properties:
                grant_type:
                  type: string
                  const: authorization_code
                code:
                  type: string
                  minLength: 1
                  maxLength: 4000
                redirect_uri:
                  type: string
                  minLength: 1
                  maxLength: 4000
                client_id:
                  type: string
                  minLength: 1
                  maxLength: 4000
                code_verifier:
                  type: string
                  minLength: 1
                  maxLength: 4000
            TokenRequestDeviceCode:
              type: object
              additionalProperties: true
              required: [grant_type, device_code, client_id]
              properties:
                grant_type:
                  type: string
                  const: 'urn:ietf:params:oauth:grant-type:device_code'
                device_code:
                  type: string
                  minLength: 1
                  maxLength: 4000
                client_id:
                  type: string
                  minLength: 1
                  maxLength: 4000
            DeviceAuthorizationRequest:
              type: object
              additionalProperties: true
              required: [client_id]
              properties:
                client_id:
                  type: string
                  minLength: 1
                  maxLength: 4000
            DeviceForm:
              type: object
              additionalProperties: true
              required: [user_code, action]
              description: '`username` and `password` are needed for `action=approve`.'
              properties:
                username:
                  type: string
                password:
                  type: string
                user_code:
                  type: string
                  minLength: 1
                  maxLength: 4000
                action:
                  type: string
                  enum: [approve, deny]
            RevokeRequest:
              type: object
              additionalProperties: true
              required: [token]
              properties:
                token:
                  type: string
                  minLength: 1
                  description: Any other token, however long, is an invalid token, answered 200 (RFC 7009 §2.2).
                token_type_hint:
                  type: string
            PasswordChangeRequest:
              type: object
              additionalProperties: true
              required: [oldPassword, newPassword]
              properties:
                oldPassword:
                  type: string
                  minLength: 1
                  maxLength: 4000
                newPassword:
                  type: string
                  minLength: 8
                  maxLength: 4000
                  description: At least 8 characters, else 400 `WEAK_PASSWORD`.
            SmsResetRequestBody:
              type: object
              additionalProperties: true
              required: [phone]
              properties:
                phone:
                  type: string
                  minLength: 1
                  maxLength: 32
                  examples: ['+8613800000001']
            SmsResetBody:
              type: object
              additionalProperties: true
              required: [phone, code, newPassword]
              properties:
                phone:
                  type: string
                  minLength: 1
                  maxLength: 32
                code:
                  type: string
                  minLength: 1
                  maxLength: 16
                newPassword:
                  type: string
                  minLength: 8
                  maxLength: 4000
                  description: At least 8 characters, else 400 `WEAK_PASSWORD`.
            TextBody:
              type: object
              additionalProperties: true
              required: [text]
              properties:
                text:
                  type: string
                  minLength: 1
                  maxLength: 4000
            FriendLinkRequest:
              type: object
              additionalProperties: true
              properties:
                ttlSeconds:
                  type: integer
                  minimum: 1
                  maximum: 2592000
                  description: Lifetime of the link (30 days at most); omitted → the server's default (7 days).
            FaultRequest:
              type: object
              additionalProperties: true
              required: [route]
              description: '`route` plus exactly one of `status`, `reset: true`, `delayMs` (at least 1), `hold: true`. A member that is present must have its type: `null` is refused (400), never read as absent.'
              oneOf:
                - required: [status]
                - required: [reset]
                  properties:
                    reset:
                      const: true
                - required: [delayMs]
                  properties:
                    delayMs:
                      minimum: 1
                - required: [hold]
                  properties:
                    hold:
                      const: true
              properties:
                route:
                  type: string
                  minLength: 1
                  maxLength: 512
                  description: '`METHOD /path`, `*` matching one path segment.'
                  examples: ['GET /api/me', 'PUT /chat/v1/conversations/*/messages/*']
                status:
                  type: integer
                  minimum: 200
                  maximum: 599
                  description: Answer with this status without running the handler (a final status; a 1xx is refused, as the client would wait for the final answer that never comes).
                reset:
                  type: boolean
                  description: Drop the connection without answering.
                delayMs:
                  type: integer
                  minimum: 0
                  maximum: 600000
                  description: Run the handler, then delay the response this long (10 minutes at most).
                hold:
                  type: boolean
                  description: Hold the request before its handler until the faults are cleared or the server stops (10 minutes at most), then run it.
                count:
                  type: integer
                  minimum: 1
                  description: How many matching requests the fault applies to; omitted → until `DELETE /__dev/faults`.
                headers:
                  type: object
                  maxProperties: 16
                  description: Response headers added to a `status` fault's answer (not allowed with `reset` or `delayMs`).
                  additionalProperties:
                    type: string
                    maxLength: 1024
                  examples:
                    - Retry-After: '3'
            Fault:
              type: object
              additionalProperties: true
              required: [id, route, status, reset, delayMs, hold, count]
              properties:
                id:
                  type: [string, integer]
                  description: Opaque fault id.
                route:
                  type: string
                status:
                  type: [integer, 'null']
                reset:
                  type: boolean
                delayMs:
                  type: [integer, 'null']
                hold:
                  type: boolean
                count:
                  type: [integer, 'null']
                  description: Remaining applications; null = unlimited.
                headers:
                  type: object
                  description: The response headers the fault adds (empty when none).
                  additionalProperties:
                    type: string
            RestrictResult:
              type: object
              additionalProperties: true
              required: [user, restricted]
              properties:
                user:
                  type: string
                  description: The user id.
                restricted:
                  type: boolean
            AppFlagResult:
              type: object
              additionalProperties: true
              required: [appId, disabled]
              properties:
                appId:
                  type: string
                disabled:
                  type: boolean
            DevSessionsRequest:
              type: object
              additionalProperties: true
              required: [count, appId]
              description: All N sessions are created in one transaction.
              properties:
                count:
                  type: integer
                  minimum: 1
                  maximum: 100000
                appId:
                  type: string
                  minLength: 1
                  maxLength: 256
            DevMessagesRequest:
              type: object
              additionalProperties: true
              required: [count, sender]
              properties:
                count:
                  type: integer
                  minimum: 1
                  maximum: 1000000
                sender:
                  type: string
                  minLength: 1
                  maxLength: 256
                  description: User id of a member of the conversation.
                text:
                  type: string
                  minLength: 1
                  maxLength: 3900
                  default: message
                  description: Prefix of the texts; message i is "`text` i".
            DevMessagesResult:
              type: object
              additionalProperties: true
              required: [created, firstSeq, lastSeq]
              properties:
                created:
                  type: integer
                firstSeq:
                  type: integer
                  description: '`seq` of the first message created; the others follow it one by one.'
                lastSeq:
                  type: integer
            AdminUser:
              allOf:
                - $ref: '#/components/schemas/User'
                - type: object
                  additionalProperties: true
                  required: [roles, restricted]
                  properties:
                    roles:
                      $ref: '#/components/schemas/Roles'
                    restricted:
                      type: boolean
                      description: True while `POST /__dev/users/{uid}/restrict` (or the platform) restricts the account.
            UserPage:
              type: object
              additionalProperties: true
              required: [users, nextCursor]
              properties:
                users:
                  type: array
                  maxItems: 1000
                  items:
                    $ref: '#/components/schemas/AdminUser'
                nextCursor:
                  type: [string, 'null']
                  description: Opaque; the `cursor` of the next page, or null on the last page.
            DevUsersRequest:
              type: object
              additionalProperties: true
              required: [count, prefix]
              properties:
                count:
                  type: integer
                  minimum: 1
                  maximum: 10000
                prefix:
                  type: string
                  pattern: '^[A-Za-z0-9._-]{1,32}$'
                  description: Ids are this prefix and a zero-padded number from 1.
                password:
                  type: string
                  minLength: 1
                  maxLength: 256
                  description: Every new user's password; omitted → `{id}-pass`.
                sessionsPerUser:
                  type: integer
                  minimum: 0
                  maximum: 100
                  default: 0
                appId:
                  type: string
                  minLength: 1
                  maxLength: 256
                  default: workbench
            DevUsersResult:
              type: object
              additionalProperties: true
              required: [users, sessions]
              properties:
                users:
                  type: array
                  description: The ids created, in order.
                  items:
                    type: string
                sessions:
                  type: array
                  description: Every session created, the user's in order, users in order.
                  items:
                    type: object
                    additionalProperties: true
                    required: [user, id, token]
                    properties:
                      user:
                        type: string
                      id:
                        type: string
                      token:
                        type: string
                        description: Its bearer token.
            Revocations:
              type: object
              additionalProperties: true
              required: [sessions]
              properties:
                sessions:
                  type: object
                  description: Session id → DELETE requests that reached it.
                  additionalProperties:
                    type: integer
                    minimum: 0
                  examples:
                    - ses_0a1b2c3d4e5f60718293: 1
                      ses_9f8e7d6c5b4a39281706: 0
            DevClock:
              type: object
              additionalProperties: true
              required: [now, offsetSeconds]
              properties:
                now:
                  type: string
                  format: date-time
                  description: The server's wall time (RFC 3339, UTC).
                offsetSeconds:
                  type: integer
                  minimum: -315360000
                  maximum: 315360000
                  description: How far it is moved from the system's time.
            RateLimit:
              type: object
              additionalProperties: true
              required: [rps]
              properties:
                rps:
                  type: integer
                  minimum: 0
                  description: Requests per second; 0 = off (the default).

        """#
}
