"""mfgtx.watch: whether the data a bundle scores still looks like its training data, and
whether the model still holds where the truth has arrived (issue 38, being built)."""
