"""Generated stubs of the arbiter.v1 API (clients/python/hack/gen-proto.sh); do not edit."""
