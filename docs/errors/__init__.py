"""The pages of docs/errors, shipped in the package as `planc.errors` for `plan explain CODE`."""
