// The one timing core of dlprep's benchmarks (owned by the benchmark work; placeholder API).
#pragma once
