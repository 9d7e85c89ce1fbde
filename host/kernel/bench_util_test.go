package kernel_test

import goruntime "runtime"

func runtimeGOMAXPROCS() int { return goruntime.GOMAXPROCS(0) }
