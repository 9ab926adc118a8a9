raise ValueError("lone surrogate \udc80 in the message")
