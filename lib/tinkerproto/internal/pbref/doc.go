// Package pbref is protoc-gen-go's code for ../tinker_public.proto
// (`make proto` regenerates it). Only tests import it: they check
// lib/tinkerproto's hand-written encoder against it both ways, so tinker
// itself does not link the protobuf runtime, whose initialisation every
// start would pay.
package pbref
