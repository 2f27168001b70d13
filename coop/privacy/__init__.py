"""What never leaves coop's hands and what is gone when forgotten: masking secrets (`secrets`, with the shapes of
secrets in `secret_shapes`) and (forgotten text is scrubbed from the files beside the database by `growth.scrub`)."""
