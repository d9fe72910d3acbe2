"""Link gates: what a reader must pass before a link's pages are served.

    policy      parsing and validating `POST /v1/views`'s `policy`, and showing it back
    passcodes   the passcode's slow hash (scrypt)
    agreements  immutable, versioned agreement texts (NDAs)
    counters    rolling-window counters in the database, shared by every vaultd process
    sessions    viewer sessions: the gates one reader of one link has passed
    codes       email codes: drawn, sent, checked
    mail        the code's mail, sent over SMTP
    check       `Gates`: one stage per gate, run by the page path's authorise stage

Sessions and policies are keyed by a link's id, not by what the link shows, so a link to
something other than a file (a data room) can carry the same policy and sessions.
"""
