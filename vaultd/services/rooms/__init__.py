"""Data rooms: one link to a set of an account's documents, in folders.

    records     rooms themselves: create (plan limit), list, read, rename, delete
    tree        a room's folders and files read whole: numbering, a link's scope
    items       changing the tree: folders and files added, renamed, moved, removed
    index       the numbered index of a room, as JSON rows or CSV
    room_links  one reader's link to a room, scoped to folders; revoking
    reads       what a room link may read, checked again on every page (`RoomPages`, a resolver
                of the page path: room pages are served by `services.pages.page_path` like any page)
    activity    what the owner learns: the room's access log, analytics, webhooks
"""
