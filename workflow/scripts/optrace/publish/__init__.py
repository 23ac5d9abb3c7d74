"""Stage family staging: store-shaped copies of the records that passed, their worth, the reviewer's README."""
