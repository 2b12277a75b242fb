import Crypto
enum _P {}
