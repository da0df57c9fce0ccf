import FuzzDriver
import FuzzSupport

FuzzDriver.run(target: "noise", NoiseFuzz.run)
