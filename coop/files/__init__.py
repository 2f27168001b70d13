"""The files coop writes beside the database and for the user: safe replacement of a user's file (`writing`),
the log (`logs`) and the trace (`trace`)."""
