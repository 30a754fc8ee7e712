module arbiter.dev/tests/differential

go 1.25.0
