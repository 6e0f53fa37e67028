//go:build cgo && linux && amd64

package fencelock

// The core is libfencelock's static library, built by build.sh (or carried by a released
// module) into lib/linux_amd64, with its header in include/.

/*
#cgo CFLAGS: -I${SRCDIR}/include
#cgo LDFLAGS: ${SRCDIR}/lib/linux_amd64/libfencelock.a -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
#include <fencelock.h>
*/
import "C"
