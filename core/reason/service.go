package reason

// Interrupted ends a run that was running when its server stopped without
// finishing it (a crash, a kill): the server marks it when it starts again,
// because the run's process, its model calls and its context are gone.
const Interrupted Code = "interrupted"

// TokenRevoked ends the runs of a token that was revoked while they were
// queued or running: what a token started ends with it, and nothing more
// is sent on its behalf.
const TokenRevoked Code = "token_revoked"
