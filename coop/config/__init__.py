"""coop's settings: their shape (`sections`), how they are loaded from TOML and the environment and validated
(`loading`), and the commented example written from the same metadata (`example`)."""
