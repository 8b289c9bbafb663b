"""What every tool call runs against: the served vault and one consistent view of its index
(``context``), parameter declarations and their validation (``params``), and the resolver
from a ref to one note (``refs``). Both the read and the write tools stand on this."""
