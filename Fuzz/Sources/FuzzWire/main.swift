import FuzzDriver
import FuzzSupport

FuzzDriver.run(target: "wire", WireFuzz.run)
