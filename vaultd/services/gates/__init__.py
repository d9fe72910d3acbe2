"""Link gates: what a reader must pass before a link's pages are served.

    registry     the session gates, registered once: what the rest reads (docs/architecture.md,
                 "Adding a gate")
    kinds        the built-in session gates, one module each (verifyEmail, passcode, agreement)
    policy       parsing and validating `POST /v1/views`'s `policy`, and showing it back
    passcodes    the passcode's slow hash (scrypt)
    agreements   immutable, versioned agreement texts (NDAs)
    counters     rolling-window counters in the database, shared by every vaultd process
    sessions     viewer sessions: the gates one reader of one link has passed
    email_codes  email codes: drawn, sent, checked
    mail         the code's mail, sent over SMTP
    actions      what a reader does in a session: open one, give the passcode, accept
    check        `Gates`: one stage per condition and the session gates, run by the page path

Sessions and policies are keyed by a link's id, not by what the link shows, so a link to
something other than a file (a data room) can carry the same policy and sessions.
"""
