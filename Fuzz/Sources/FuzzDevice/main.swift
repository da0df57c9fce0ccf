import FuzzDriver
import FuzzSupport

FuzzDriver.run(target: "device", DeviceFuzz.run)
